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


#: the node ids of the xdist_group tests that --dist loadgroup did not group (see pytest_collection_finish)
_UNGROUPED: set[str] = set()


def pytest_collection_finish(session):
    """Under ``--dist loadgroup`` (.ci/run) every test marked ``xdist_group`` must carry its group in its
    node id: that suffix is what sends a group to one worker. pytest 9.2 drops it silently
    (pytest-dev/pytest-xdist#1386), and the Ray tests would then start one local Ray per worker, so each
    such test fails, saying why, instead of running ungrouped."""
    if getattr(session.config.option, "loadgroup", False):
        _UNGROUPED.update(
            item.nodeid
            for item in session.items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid
        )


def pytest_runtest_setup(item):
    if item.nodeid in _UNGROUPED:  # before any fixture (a local Ray) is set up
        pytest.fail(
            f"--dist loadgroup did not group this xdist_group test: pytest {pytest.__version__} with this "
            "pytest-xdist drops the group suffix (pytest-dev/pytest-xdist#1386); install the dev extra's "
            "pytest (pyproject.toml: pytest<9.2)"
        )
