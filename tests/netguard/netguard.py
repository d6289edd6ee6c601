"""Refuse every network use that is not loopback (or a test's own machine-local network, named
in `REVIEWFLOW_TEST_NETWORKS`): connect, UDP sends and name lookups.

The test suite applies it with monkeypatch; `sitecustomize.py` beside this file installs it in
every Python subprocess a test starts (CLI runs, Prefect's test server), via PYTHONPATH.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any

_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "")
# Networks a test made on this machine (a veth pair to a network namespace, see
# `tests/deploy/netns.py`), CIDR blocks separated by commas; read at each check, and inherited.
ALLOW_VARIABLE = "REVIEWFLOW_TEST_NETWORKS"


class NetworkBlockedError(AssertionError):
    """A test tried to reach beyond loopback (not an OSError: no client retries it away)."""


BLOCKED: list[str] = []  # every refusal in this process, so a swallowed one still fails


def is_loopback_host(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return address.is_loopback or any(address in network for network in _allowed())


def _allowed() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    blocks = os.environ.get(ALLOW_VARIABLE, "").split(",")
    return [ipaddress.ip_network(block.strip()) for block in blocks if block.strip()]


def is_loopback(address: Any) -> bool:
    """True for loopback (host, port, ...) tuples and for AF_UNIX paths."""
    if not isinstance(address, tuple):
        return True
    return is_loopback_host(address[0])


def _refuse(what: str, target: object) -> NetworkBlockedError:
    message = f"network access outside loopback blocked: {what} {target!r}"
    BLOCKED.append(message)
    return NetworkBlockedError(message)


def guarded_methods() -> dict[str, Callable[..., Any]]:
    """Replacements for socket.socket methods, keyed by name."""
    real = {name: getattr(socket.socket, name) for name in ("connect", "connect_ex", "sendto")}

    def connect(self: socket.socket, address: Any) -> Any:
        if not is_loopback(address):
            raise _refuse("connect", address)
        return real["connect"](self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not is_loopback(address):
            raise _refuse("connect", address)
        return real["connect_ex"](self, address)

    def sendto(self: socket.socket, data: bytes, *args: Any) -> Any:
        if not is_loopback(args[-1]):
            raise _refuse("sendto", args[-1])
        return real["sendto"](self, data, *args)

    return {"connect": connect, "connect_ex": connect_ex, "sendto": sendto}


def guarded_getaddrinfo() -> Callable[..., Any]:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback_host(host):
            raise _refuse("name lookup", host)
        return real(host, *args, **kwargs)

    return getaddrinfo


def install() -> None:
    """Patch this process for good (used by sitecustomize in subprocesses)."""
    for name, method in guarded_methods().items():
        setattr(socket.socket, name, method)
    socket.getaddrinfo = guarded_getaddrinfo()  # type: ignore[assignment]
