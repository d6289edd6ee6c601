"""The Review Filter (steps 5-6) over the wire server: IDs to delete only, failure keeps all."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reviewflow.findings import filter_file, relocate_file
from reviewflow.findings.models import DropReason, FileFindings
from reviewflow.git.models import FileDiff
from reviewflow.models import Candidate
from tests.findings.conftest import SendTo, no_model
from tests.wire_server import HttpError, Text, WireServer

Make = Callable[..., Candidate]


@pytest.fixture
def found(change: dict[str, FileDiff], candidate: Make) -> FileFindings:
    """Three placed candidates on app/billing.py: c-0, c-1, c-2."""
    candidates = [
        candidate(existing_code="    return total_price / len(items)"),
        candidate(existing_code="    handle = open(path)", title="File handle leak"),
        candidate(existing_code="    return items[len(items)]", title="Index out of range"),
    ]
    result = relocate_file(change["app/billing.py"], candidates, no_model)
    assert [p.id for p in result.placed] == ["c-0", "c-1", "c-2"]
    return result


def test_deletes_only_the_ids_it_names(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
    protocol: str,
) -> None:
    wire.script(protocol, [Text('["c-1"]')])
    filtered = filter_file(change["app/billing.py"], found, send_to(protocol))
    assert [p.id for p in filtered.placed] == ["c-0", "c-2"]
    assert [(d.title, d.reason) for d in filtered.dropped] == [
        ("File handle leak", DropReason.FILTERED)
    ]
    assert filtered.complete and [r.stage for r in filtered.records] == ["filter"]
    body = str(wire.requests(protocol)[0].body)
    assert "c-2" in body and "return items[len(items)]" in body
    wire.assert_done()


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        ('{"delete": ["c-0", "c-2"]}', ["c-1"]),
        ('{"ids": []}', ["c-0", "c-1", "c-2"]),
        ('[{"id": "c-2", "reason": "line 39 is items[-1] in the diff"}]', ["c-0", "c-1"]),
        ("```\n[]\n```", ["c-0", "c-1", "c-2"]),
    ],
    ids=["delete", "ids-empty", "objects", "fenced"],
)
def test_wrappers(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
    answer: str,
    kept: list[str],
) -> None:
    wire.script("openai", [Text(answer)])
    filtered = filter_file(change["app/billing.py"], found, send_to("openai"))
    assert [p.id for p in filtered.placed] == kept and filtered.complete


def test_the_reason_is_kept(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
) -> None:
    wire.script("gemini", [Text('{"delete": [{"id": "c-0", "reason": "guarded above"}]}')])
    filtered = filter_file(change["app/billing.py"], found, send_to("gemini"))
    assert [(d.reason, d.detail) for d in filtered.dropped] == [
        (DropReason.FILTERED, "guarded above")
    ]


def test_malformed_then_strict_retry(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
) -> None:
    wire.script("anthropic", [Text("I would delete c-1."), Text('["c-1"]')])
    filtered = filter_file(change["app/billing.py"], found, send_to("anthropic"))
    assert [p.id for p in filtered.placed] == ["c-0", "c-2"] and filtered.complete
    assert [r.status for r in filtered.records] == ["error", "ok"]
    retry = wire.requests("anthropic")[1].body["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert '["c-1"]' in str(retry[2]["content"])


@pytest.mark.parametrize(
    "garbage", ['["c-9"]', '{"delete": "c-1"}', "[1, 2]", '{"delete": [], "ids": []}']
)
def test_garbage_twice_keeps_every_candidate(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
    garbage: str,
) -> None:
    wire.script("openai", [Text(garbage), Text(garbage)])
    filtered = filter_file(change["app/billing.py"], found, send_to("openai"))
    assert filtered.placed == found.placed and filtered.dropped == found.dropped
    assert not filtered.complete
    assert [w.code for w in filtered.warnings] == ["review_filter_failed"]
    assert len(filtered.records) == 2
    wire.assert_done()


def test_provider_failure_keeps_every_candidate(
    change: dict[str, FileDiff],
    found: FileFindings,
    wire: WireServer,
    send_to: SendTo,
) -> None:
    wire.script("anthropic", [HttpError(400)])
    filtered = filter_file(change["app/billing.py"], found, send_to("anthropic"))
    assert filtered.placed == found.placed and not filtered.complete
    (record,) = filtered.records
    assert record.status == "error" and "HTTP 400" in (record.error or "")


def test_nothing_placed_means_no_request(change: dict[str, FileDiff]) -> None:
    empty = FileFindings(path="app/billing.py")
    assert filter_file(change["app/billing.py"], empty, no_model) is empty
