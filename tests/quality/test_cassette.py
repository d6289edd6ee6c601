"""The recording proxy: bodies kept, keys never; a replay answers from the tape and refuses
what it does not hold."""

from __future__ import annotations

import json

import httpx

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
