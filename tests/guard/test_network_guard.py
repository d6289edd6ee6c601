"""The suite's own network guard: in this process and in Python subprocesses."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.netguard import netguard


def test_connect_beyond_loopback_is_refused() -> None:
    with socket.socket() as sock, pytest.raises(netguard.NetworkBlockedError):
        sock.connect(("192.0.2.1", 443))
    netguard.BLOCKED.clear()  # seen; don't fail this test at teardown


def test_udp_and_name_lookups_are_refused() -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        pytest.raises(netguard.NetworkBlockedError),
    ):
        sock.sendto(b"x", ("192.0.2.1", 9))
    with pytest.raises(netguard.NetworkBlockedError):
        socket.getaddrinfo("api.openai.com", 443)
    netguard.BLOCKED.clear()


def test_loopback_is_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    assert socket.getaddrinfo("localhost", 80)


def test_python_subprocesses_are_guarded_too() -> None:
    probe = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 443), timeout=2)\n"
        "except AssertionError as exc:\n"
        "    print('blocked', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.startswith("blocked"), out.stderr
