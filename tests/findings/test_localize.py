"""Localization: one batch rewrites the four text fields by ID and nothing else."""

from __future__ import annotations

import json

import pytest

from reviewflow.findings import is_english, localize
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.models import Category, Severity
from tests.findings.conftest import SendTo, no_model
from tests.wire_server import HttpError, Text, WireServer


def _finding(fid: str, line: int, title: str) -> Finding:
    return Finding(
        id=fid,
        fingerprint=fid.lower() * 4,
        severity=Severity.HIGH,
        category=Category.CORRECTNESS,
        path="app/billing.py",
        start_line=line,
        end_line=line,
        title=title,
        problem=f"{title}: the problem.",
        evidence="",
        suggestion="Guard it.",
        confidence=0.9,
        existing_code="    return total_price / len(items)",
        placed_by=PlacedBy.EXACT,
    )


FINDINGS = (_finding("Fa1", 16, "Division by zero"), _finding("Fb2", 39, "Index out of range"))


def _german(**extra: object) -> list[dict[str, object]]:
    return [
        {"id": "Fa1", "title": "Division durch null", "problem": "Das Problem.", **extra},
        {"id": "Fb2", "title": "Index außerhalb", "suggestion": "Absichern.", **extra},
    ]


@pytest.mark.parametrize("language", ["en", "en-US", "EN-gb", "en-Latn-US"])
def test_no_request_for_english(language: str) -> None:
    assert is_english(language)
    localized = localize(FINDINGS, language, no_model)
    assert localized.findings == FINDINGS and localized.complete and not localized.records


def test_not_english() -> None:
    assert not any(is_english(tag) for tag in ("de", "zh-CN", "eng", "fr-en"))


def test_rewrites_the_four_text_fields_by_id(
    wire: WireServer, send_to: SendTo, protocol: str
) -> None:
    wire.script(protocol, [Text(json.dumps(_german(), ensure_ascii=False))])
    localized = localize(FINDINGS, "de-DE", send_to(protocol))
    first, second = localized.findings
    assert (first.title, first.problem, first.suggestion) == (
        "Division durch null",
        "Das Problem.",
        "Guard it.",  # a field the answer left out keeps its text
    )
    assert (second.title, second.suggestion) == ("Index außerhalb", "Absichern.")
    assert localized.complete and [r.stage for r in localized.records] == ["localize"]
    request = str(wire.requests(protocol)[0].body)
    assert "de-DE" in request and "Division by zero" in request
    wire.assert_done()


def test_nothing_but_text_can_change(wire: WireServer, send_to: SendTo) -> None:
    sneaky = _german(severity="low", path="x.py", start_line=1, confidence=0.1, category="tests")
    wire.script("openai", [Text(json.dumps({"findings": sneaky}))])
    localized = localize(FINDINGS, "de", send_to("openai"))
    for before, after in zip(FINDINGS, localized.findings, strict=True):
        keep = {"title", "problem", "evidence", "suggestion"}
        assert before.model_dump(exclude=keep) == after.model_dump(exclude=keep)
    assert localized.findings[0].title == "Division durch null"


@pytest.mark.parametrize(
    "bad",
    [
        json.dumps(_german()[:1]),  # one finding fewer
        json.dumps([*_german(), {"id": "Fzz", "title": "neu"}]),  # one more
        json.dumps([*_german(), _german()[0]]),  # repeated
        json.dumps([{"id": "Fa1", "title": ""}, _german()[1]]),  # a title blanked
        json.dumps({"translations": _german(), "findings": _german()}),  # two wrappers
        "Hier ist die Übersetzung.",
    ],
    ids=["fewer", "more", "repeated", "blanked", "two-wrappers", "prose"],
)
def test_malformed_twice_keeps_the_originals(wire: WireServer, send_to: SendTo, bad: str) -> None:
    wire.script("gemini", [Text(bad), Text(bad)])
    localized = localize(FINDINGS, "de", send_to("gemini"))
    assert localized.findings == FINDINGS and not localized.complete
    assert [w.code for w in localized.warnings] == ["localization_failed"]
    assert [r.status for r in localized.records] == ["error", "error"]
    wire.assert_done()


def test_malformed_then_strict_retry(wire: WireServer, send_to: SendTo) -> None:
    wire.script("anthropic", [Text(json.dumps(_german()[:1])), Text(json.dumps(_german()))])
    localized = localize(FINDINGS, "de", send_to("anthropic"))
    assert localized.complete and localized.findings[1].title == "Index außerhalb"
    assert localized.records[0].error == "findings missing from the answer: Fb2"


def test_provider_failure_keeps_the_originals(wire: WireServer, send_to: SendTo) -> None:
    wire.script("openai", [HttpError(403)])
    localized = localize(FINDINGS, "fr", send_to("openai"))
    assert localized.findings == FINDINGS and not localized.complete
    assert localized.records[0].status == "error"
