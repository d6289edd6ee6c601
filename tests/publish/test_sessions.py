"""Why a request to a platform got no answer, as the one line a user reads: the host and the
reason, never urllib3's pool and retry text (a refused port and a silent one, for real)."""

from __future__ import annotations

import socket

import pytest
import requests

from reviewflow.publish.sessions import unreachable


def _failure(url: str, timeout: float = 0.2) -> requests.RequestException:
    with pytest.raises(requests.RequestException) as caught:
        requests.get(url, timeout=timeout)
    return caught.value


def test_a_refused_port_and_a_silent_one_are_said_plainly() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections, never answers
        port = silent.getsockname()[1]
        slow = unreachable(_failure(f"http://127.0.0.1:{port}/api"))
    refused = unreachable(_failure(f"http://127.0.0.1:{port}/api"))  # closed now
    assert slow == f"127.0.0.1:{port}: no answer in time"
    assert refused == f"127.0.0.1:{port}: connection refused"
    assert "HTTPConnectionPool" not in slow + refused
