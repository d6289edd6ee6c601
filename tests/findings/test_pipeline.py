"""The findings stages end to end, as the flow chains them, on a change with real defects."""

from __future__ import annotations

import json
from collections.abc import Callable

from reviewflow.config import ReviewSettings
from reviewflow.findings import (
    Finalized,
    filter_file,
    finalize,
    gate,
    group_candidates,
    localize,
    relocate_file,
)
from reviewflow.findings.models import DropReason
from reviewflow.git.models import FileDiff
from reviewflow.models import Candidate, Severity
from reviewflow.review.records import Send
from tests.findings.conftest import LINES, SendTo
from tests.wire_server import Text, WireServer

Make = Callable[..., Candidate]


def _candidates(candidate: Make) -> list[Candidate]:
    return [
        # right code, wrong line numbers
        candidate(existing_code="    return total_price / len(items)", start_line=3, end_line=3),
        # re-indented code
        candidate(
            existing_code="handle = open(path)\ndata = handle.read()",
            start_line=1,
            category="resource_management",
            title="File handle never closed",
        ),
        # the first finding again, in other words and lines
        candidate(existing_code="return total_price / len(items)", start_line=30, title="Again"),
        # low confidence
        candidate(start_line=LINES["index"], confidence=0.3, title="Maybe off by one"),
        # unknown category
        candidate(start_line=LINES["sql"], category="naming", title="Name it better"),
        # a path outside the change
        candidate(file="app/models.py", start_line=4, title="Ghost file"),
        # unchanged line, no code: relocation places it
        candidate(start_line=6, severity="critical", category="security", title="SQL injection"),
        # unchanged line, no code: relocation cannot place it
        candidate(start_line=7, severity="low", title="Vague worry"),
        # on the worker: disproved by the review filter
        candidate(
            file="app/worker.py",
            existing_code="self.value = current + 1",
            category="concurrency",
            title="Lost update",
        ),
    ]


def _run(change: dict[str, FileDiff], candidates: list[Candidate], send: Send) -> Finalized:
    groups, outside = group_candidates(candidates, change)
    files = []
    for path in sorted(groups):
        found = relocate_file(change[path], groups[path], send)
        files.append(filter_file(change[path], found, send))
    return finalize(files, ReviewSettings(), outside)


def test_candidates_to_findings(
    change: dict[str, FileDiff], candidate: Make, wire: WireServer, send_to: SendTo
) -> None:
    sql = "    query = \"SELECT * FROM customers WHERE name = '%s'\" % name"
    wire.script(
        "openai",
        [
            Text(json.dumps({"relocations": [{"id": "c-5", "existing_code": sql}]})),
            Text("[]"),  # the review filter of app/billing.py
            Text('["c-0"]'),  # the review filter of app/worker.py
            Text("```json\n" + json.dumps([{"id": "c-5", "title": "SQL"}]) + "\n```"),
            Text("Keine Übersetzung."),  # localization's strict retry
        ],
    )
    final = _run(change, _candidates(candidate), send_to("openai"))
    findings = final.findings
    assert [(f.severity, f.category, f.start_line, f.end_line, f.title) for f in findings] == [
        (Severity.CRITICAL, "security", LINES["sql"], LINES["sql"], "SQL injection"),
        (Severity.HIGH, "correctness", 16, 16, "Division by zero"),
        (Severity.HIGH, "correctness", 20, 21, "File handle never closed"),
    ]
    division = findings[1]
    reasons = [(d.path, d.title, d.reason, d.duplicate_of) for d in final.dropped]
    assert sorted(reasons, key=str) == sorted(
        [
            ("app/models.py", "Ghost file", DropReason.OUTSIDE_CHANGE, None),
            ("app/billing.py", "Name it better", DropReason.UNKNOWN_CATEGORY, None),
            ("app/billing.py", "Vague worry", DropReason.UNCHANGED_LINE, None),
            ("app/billing.py", "Maybe off by one", DropReason.BELOW_THRESHOLD, None),
            ("app/billing.py", "Again", DropReason.DUPLICATE, division.id),
            ("app/worker.py", "Lost update", DropReason.FILTERED, None),
        ],
        key=str,
    )
    assert final.complete
    assert gate(findings, ReviewSettings().fail_on, final.complete) == 1
    localized = localize(findings, "de", send_to("openai"))
    assert not localized.complete and localized.findings == findings
    assert gate(localized.findings, [Severity.LOW], localized.complete) == 2
    wire.assert_done()


def test_same_input_twice_gives_identical_findings(
    change: dict[str, FileDiff], candidate: Make, wire: WireServer, send_to: SendTo
) -> None:
    relocation = Text('[{"id": "c-5", "existing_code": "    return db.execute(query)"}]')
    wire.script("gemini", [relocation, Text("[]"), Text("[]")] * 2)
    send = send_to("gemini")
    first = _run(change, _candidates(candidate), send)
    second = _run(change, _candidates(candidate), send)
    assert first.findings == second.findings
    assert first.dropped == second.dropped
    assert [f.start_line for f in first.findings] == [27, 16, 20, 11]
    wire.assert_done()
