"""The judge through reviewflow's real client against the scripted wire server, and its
answers read strictly (an unreadable answer is an error verdict, never a match)."""

from __future__ import annotations

import json

from bench.quality.judge import (
    extract_issues,
    judge_pairs,
    judge_request,
    parse_verdict,
    provider_ask,
)
from reviewflow.providers.factory import create_provider
from reviewflow.providers.messages import Usage
from tests.wire_server import HttpError, Text, WireServer


def test_every_pair_gets_its_verdict_with_reasoning_and_usage(wire: WireServer) -> None:
    wire.script(
        "openai",
        [
            Text('{"reasoning": "same bug", "match": true, "confidence": 0.8}'),
            Text("I think not."),
            HttpError(400),
        ],
    )
    provider = create_provider(wire.settings("openai"))
    verdicts = judge_pairs(
        provider_ask(provider, pause=0),
        [(0, 0), (0, 1), (1, 0)],
        ["G0", "G1"],
        ["F0", "F1"],
        workers=1,
    )
    assert [(v.golden, v.finding, v.match) for v in verdicts] == [
        (0, 0, True),
        (0, 1, False),
        (1, 0, False),
    ]
    assert verdicts[0].reasoning == "same bug" and verdicts[0].prompt_tokens > 0
    assert verdicts[1].error == "unreadable answer"
    assert verdicts[2].error is not None
    bodies = [json.dumps(r.body) for r in wire.requests("openai")]
    assert "G0" in bodies[0] and "F0" in bodies[0] and "untrusted-data" in bodies[0]


def test_answers_are_read_fenced_or_bare_and_never_guessed() -> None:
    fenced = parse_verdict(0, 0, '```json\n{"match": false, "confidence": 1}\n```', Usage())
    assert (fenced.match, fenced.confidence, fenced.error) == (False, 1.0, None)
    assert parse_verdict(0, 0, '{"match": "yes"}', Usage()).error == "unreadable answer"


def test_the_judge_request_is_deterministic_for_replay() -> None:
    assert judge_request("g", "f") == judge_request("g", "f")
    assert judge_request("g", "f").temperature == 0.0


def test_a_free_text_review_is_split_into_issues(wire: WireServer) -> None:
    wire.script("openai", [Text('["a.py:3 divides by zero", "missing test"]')])
    ask = provider_ask(create_provider(wire.settings("openai")), pause=0)
    issues, usage = extract_issues(ask, "## Review\n- a.py:3 divides by zero\n- add a test")
    assert issues == ["a.py:3 divides by zero", "missing test"] and usage.total_tokens > 0
    assert extract_issues(ask, "  ") == ([], Usage())
