"""The demo's serving arguments (``hf_querygen.demo.check_serve_arguments``) are checked before anything
starts, models or Gradio: a port out of range or taken, a negative / NaN / infinite ``--max-seconds``, a
host that does not resolve (or whose name server never answers) or is not this machine's are one clear
error naming the argument, from the API and the CLI alike. Needs neither gradio nor trained models."""

from __future__ import annotations

import socket
import time

import pytest

from hf_querygen import demo as demo_module
from hf_querygen.cli import main as cli_main
from hf_querygen.demo import check_serve_arguments
from hf_querygen.errors import InvalidInputError


@pytest.mark.parametrize(
    ("host", "port", "max_seconds", "named"),
    [
        ("127.0.0.1", 0, None, "port=0"),
        ("127.0.0.1", 70000, None, "port=70000"),
        ("127.0.0.1", -1, None, "port=-1"),
        ("127.0.0.1", "8080", None, "port='8080'"),
        ("127.0.0.1", True, None, "port=True"),
        ("127.0.0.1", None, -5.0, "max_seconds=-5.0"),
        ("127.0.0.1", None, 0, "max_seconds=0"),
        ("127.0.0.1", None, float("nan"), "max_seconds=nan"),
        ("127.0.0.1", None, float("inf"), "max_seconds=inf"),
        ("", None, None, "host=''"),
        (None, None, None, "host=None"),
        ("no-such-host.invalid", None, None, "host='no-such-host.invalid'"),
        ("192.0.2.1", None, None, "192.0.2.1"),  # TEST-NET: resolves, but is no address of this machine
    ],
)
def test_bad_serving_arguments_are_named(host, port, max_seconds, named):
    with pytest.raises(InvalidInputError, match=named.replace("(", r"\(").replace(".", r"\.")):
        check_serve_arguments(host, port, max_seconds)


def test_a_taken_port_is_named():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(InvalidInputError, match=f"cannot serve on port {port}.*choose another --port"):
            check_serve_arguments("127.0.0.1", port, None)


def test_a_name_server_that_never_answers_does_not_hang(monkeypatch):
    monkeypatch.setattr(demo_module, "HOST_RESOLVE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: time.sleep(30))
    started = time.monotonic()
    with pytest.raises(InvalidInputError, match="host='slow.example'.*no answer within 0.3 s"):
        check_serve_arguments("slow.example", None, None)
    assert time.monotonic() - started < 5


def test_good_arguments_resolve_the_host_once():
    serve = check_serve_arguments("localhost", None, 1)
    assert serve.host in ("127.0.0.1", "::1") and serve.port is None and serve.max_seconds == 1.0


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--port", "70000"], "port=70000"),
        (["--max-seconds", "nan"], "max_seconds=nan"),
        (["--max-seconds", "-1"], "max_seconds=-1.0"),
        (["--host", "no-such-host.invalid"], "no-such-host.invalid"),
    ],
)
def test_cli_demo_refuses_before_building_anything(tmp_path, capsys, argv, named):
    models = tmp_path / "models"
    assert cli_main(["demo", "--models-dir", str(models), *argv]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err and err.count("\n") == 1
    assert not models.exists()  # no quick model was trained
