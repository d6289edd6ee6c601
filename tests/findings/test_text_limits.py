"""A model that writes megabytes into a finding's text cannot make megabyte reports: each text
field is cut, with a marker, wherever a finding's text enters (the tool loop, localization),
and tool arguments are bounded in the process records."""

from __future__ import annotations

import json

from reviewflow.findings import localize
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.models import TEXT_LIMITS, Category, Severity, cut_text
from reviewflow.providers.messages import ToolCall
from reviewflow.report.outcome import report_schema
from reviewflow.review.candidates import candidate_from
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import MAX_RECORDED_TEXT
from reviewflow.review.session import ToolSession
from tests.findings.conftest import SendTo
from tests.wire_server import Text, WireServer

HUGE = "x" * 2_000_000


def test_a_cut_text_keeps_its_start_and_says_how_long_it_was() -> None:
    cut = cut_text("abcdefghij" * 100, 60)
    assert len(cut) == 60 and cut.startswith("abcdefghij")
    assert cut.endswith(" […cut: 1000 characters in all]")
    assert cut_text(cut, 60) == cut  # cutting again changes nothing
    assert cut_text("short", 60) == "short"


def test_every_text_field_of_a_candidate_is_bounded() -> None:
    finding = {name: HUGE for name in TEXT_LIMITS} | {"severity": "high", "confidence": 0.9}
    candidate = candidate_from({"finding": finding}, "app.py", 0)
    for name, limit in TEXT_LIMITS.items():
        value = getattr(candidate, name)
        assert len(value) == limit and value.endswith("characters in all]"), name
    again = type(candidate).model_validate_json(candidate.model_dump_json())
    assert again == candidate  # a cached candidate reads back the same


def test_tool_arguments_in_the_process_records_are_bounded() -> None:
    snapshot = Snapshot.__new__(Snapshot)  # code_comment never reads the snapshot
    session = ToolSession(snapshot, "app.py", 0, budget=0)
    call = ToolCall(id="c1", name="code_comment", arguments={"finding": {"problem": HUGE}})
    outcome = session.run(call)
    recorded = outcome.record.arguments["finding"]["problem"]
    assert len(recorded) < MAX_RECORDED_TEXT + 40
    assert len(session.candidates[0].problem) == TEXT_LIMITS["problem"]


def test_localization_cannot_lengthen_a_finding_past_the_bounds(
    wire: WireServer, send_to: SendTo
) -> None:
    finding = Finding(
        id="Fa1",
        fingerprint="fa1" * 8,
        severity=Severity.HIGH,
        category=Category.CORRECTNESS,
        path="app.py",
        start_line=3,
        end_line=3,
        title="Division by zero",
        problem="The problem.",
        confidence=0.9,
        existing_code="return a / 0",
        placed_by=PlacedBy.EXACT,
    )
    wire.script("openai", [Text(json.dumps([{"id": "Fa1", "title": HUGE, "problem": HUGE}]))])
    (localized,) = localize([finding], "de", send_to("openai")).findings
    assert len(localized.title) == TEXT_LIMITS["title"]
    assert len(localized.problem) == TEXT_LIMITS["problem"]


def test_the_report_schema_states_the_bounds() -> None:
    finding = report_schema()["$defs"]["finding"]["properties"]
    for name, limit in TEXT_LIMITS.items():
        if name != "file":  # a finding's path is the reviewed file's, never the model's text
            assert finding[name]["maxLength"] == limit, name
    assert report_schema()["$defs"]["dropped"]["properties"]["title"]["maxLength"] == 300
