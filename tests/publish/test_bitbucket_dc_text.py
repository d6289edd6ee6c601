"""Bitbucket Data Center's text: markers it never renders, both ways; mentions made inert."""

from __future__ import annotations

import pytest

from reviewflow.publish.bitbucket.dc_text import from_dc, to_dc
from reviewflow.publish.safe import safe_inline, safe_text
from reviewflow.pullrequest.markers import (
    RESOLVED,
    finding_fingerprint,
    finding_marker,
    is_resolution,
    summary_marker,
    summary_state,
)
from reviewflow.pullrequest.state import SummaryState

FP = "a" * 64


@pytest.mark.parametrize(
    "body",
    [
        f"{finding_marker(FP)}\n\n**HIGH** · finding",
        f"{RESOLVED}\nreviewflow no longer reports this",
        summary_marker(SummaryState(base="b" * 40, head="h" * 40)) + "\n## Review",
        "a person's comment <!-- reviewflow:finding not at the start -->",
    ],
)
def test_markers_round_trip_and_are_never_html_on_the_server(body: str) -> None:
    stored = to_dc(body)
    assert not stored.startswith("<!--")
    assert from_dc(stored) == body


def test_the_markers_parsing_reads_what_the_adapter_gives_back() -> None:
    assert finding_fingerprint(from_dc(to_dc(finding_marker(FP) + "\n\nx"))) == FP
    assert is_resolution(from_dc(to_dc(RESOLVED + "\nok")))
    state = SummaryState(base="b" * 40, head="h" * 40)
    assert summary_state(from_dc(to_dc(summary_marker(state) + "\n"))) == state
    assert to_dc(finding_marker(FP)).startswith(f"[//]: # (reviewflow:finding {FP})\n\n")


def test_template_html_becomes_markdown_and_escaped_model_html_stays_escaped() -> None:
    body = (
        "<details><summary>What was reviewed</summary>\nx\n</details>\n"
        "<sub>footer</sub> \\<sub>m\\</sub>"
    )
    assert to_dc(body) == "**What was reviewed**\nx\n\n*footer* \\<sub>m\\</sub>"


@pytest.mark.parametrize("text", ['@"Jane Doe" please look', "@jdoe", "cc @team-leads"])
def test_bitbucket_mentions_are_inert(text: str) -> None:
    for safe in (safe_inline(text), safe_text(text)):
        assert "@\u200b" in safe and not any(
            safe[i + 1] in '"jt' for i, c in enumerate(safe) if c == "@"
        )
