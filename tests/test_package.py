import socket
import subprocess
import sys

import pytest


def test_import_is_cheap_and_registers():
    import hf_querygen

    assert hf_querygen.__version__


def test_network_is_blocked():
    with pytest.raises(RuntimeError, match="network connection"):
        socket.create_connection(("93.184.216.34", 80), timeout=1)


def test_cli_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "hf_querygen.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "reproduce" in out.stdout
