"""Suite-wide guards: the Hub is offline and any socket to a non-local address fails loudly."""

import os
import socket

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# pytest-xdist runs one worker per core; a second torch thread per worker only busy-waits.
torch.set_num_threads(1)

_real_connect = socket.socket.connect


class NetworkCallInTest(RuntimeError):
    pass


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (
        host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")
    ):
        return _real_connect(self, address)
    raise NetworkCallInTest(f"test tried to open a network connection to {address!r}")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield


@pytest.fixture(scope="session")
def data_dir():
    """The real corpora (../shared/data); tests that need them skip only if it is truly absent."""
    from hf_querygen.corpora import resolve_data_dir

    try:
        return resolve_data_dir()
    except FileNotFoundError as err:
        if os.environ.get("CI"):  # CI has ../shared beside the clone: a missing data dir is a failure there
            pytest.fail(str(err))
        pytest.skip(str(err))
