"""The recording proxy: bodies kept, keys never; a replay answers from the tape and refuses
what it does not hold."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

import httpx
import pytest

from bench.quality.cassette import Tape, proxy
from tests.wire_server import TEST_KEY, Text, WireServer


def test_record_then_replay_without_the_endpoint(wire: WireServer) -> None:
    wire.script("openai", [Text("first"), Text("second")])
    tape = Tape()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {TEST_KEY}"}
    with proxy(wire.base_url("openai"), tape) as live:
        one = httpx.post(live.url + "/chat/completions?key=secret", json=body, headers=headers)
        two = httpx.post(live.url + "/chat/completions", json=body, headers=headers)
    assert one.status_code == 200 and "first" in one.text and "second" in two.text
    assert wire.requests("openai")[0].credential == TEST_KEY  # the key reached the endpoint
    stored = json.dumps(tape.as_json())
    assert TEST_KEY not in stored and "secret" not in stored
    assert tape.exchanges[0].request == body and tape.exchanges[0].stage == "review"

    replayed = Tape.from_json(json.loads(stored))
    with proxy(None, replayed) as offline:
        again = [httpx.post(offline.url + "/chat/completions", json=body).text for _ in range(2)]
        other = httpx.post(offline.url + "/chat/completions", json={"other": 1})
    assert ["first" in again[0], "second" in again[1]] == [True, True]
    assert other.status_code == 599 and len(replayed.misses) == 1
    assert len(wire.requests()) == 2


def test_a_client_that_hangs_up_mid_request_leaves_no_traceback(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with proxy(None, Tape()) as offline:
        port = int(offline.url.rsplit(":", 1)[1])
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"POST /chat/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, not a close: the handler's read fails
        _handled(deadline=time.monotonic() + 5)
    assert "Traceback" not in capfd.readouterr().err


def _handled(deadline: float) -> None:
    """Until the request's handler thread has run and ended (at most until `deadline`: a
    handler too quick to be seen has ended by then all the same)."""
    seen = False
    while time.monotonic() < deadline:
        running = any("process_request" in t.name for t in threading.enumerate())
        if seen and not running:
            return
        seen |= running
        time.sleep(0.005)
