"""Hash-anchored lines: the tags the prompt shows, their parsing, and placement by them
(stale tags, tags against the quoted code, tags alone, malformed ones)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from reviewflow.anchors import Anchor, AnchorRange, line_hash, parse_anchor, strip_tag, tag
from reviewflow.config import ReviewSettings
from reviewflow.findings import finalize, relocate_file
from reviewflow.findings.models import DropReason, PlacedBy
from reviewflow.findings.placement import Placement, new_sides, place
from reviewflow.git.models import FileDiff
from reviewflow.models import Candidate
from reviewflow.report.outcome import report_schema
from reviewflow.review.candidates import candidate_from
from reviewflow.review.jobs import chunk_file
from tests.findings.conftest import LINES, SendTo, no_model
from tests.wire_server import Text, WireServer

Make = Callable[..., Candidate]
BILLING = "app/billing.py"
SQL = "    query = \"SELECT * FROM customers WHERE name = '%s'\" % name"


def tags_shown(file: FileDiff) -> dict[int, str]:
    """The tag the main prompt shows for each new-side line of `file`, read from its chunks."""
    text = "\n".join(chunk.text for chunk in chunk_file(file, 100_000))
    return {
        int(no): f"L{no}#{digest}" for no, digest in re.findall(r"^L(\d+)#(\w{3}) ", text, re.M)
    }


def test_a_tag_is_the_line_number_and_a_stable_hash_of_the_content() -> None:
    assert tag(16, "    return total_price / len(items)") == "L16#9e3"
    assert line_hash("x = 1  \r") == line_hash("x = 1")  # trailing whitespace ignored
    assert line_hash("    x = 1") != line_hash("x = 1")  # indentation counts
    assert re.fullmatch(r"[0-9a-f]{3}", line_hash("é \udcff"))  # any text, undecodable bytes too


def test_the_prompt_tags_every_new_side_line_and_no_deleted_one(
    change: dict[str, FileDiff],
) -> None:
    shown = tags_shown(change[BILLING])
    sides = new_sides(change[BILLING])
    assert shown == {line.no: tag(line.no, line.text) for side in sides for line in side}
    worker = chunk_file(change["app/worker.py"], 100_000)[0].text.splitlines()
    assert worker[1:3] == ["L4#203   class Counter:", "L5#5ce       def __init__(self):"]


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [
        ("L42#a3f", (42, "a3f"), (42, "a3f")),
        (" L42#A3F-L45#b12 ", (42, "a3f"), (45, "b12")),
        ("L45#b12 - L42#a3f", (42, "a3f"), (45, "b12")),  # reversed
        ("L42#a3f, L43#000, L45#b12", (42, "a3f"), (45, "b12")),  # a list: first and last
        ("L42#a3f +    return total / n", (42, "a3f"), (42, "a3f")),  # a line with its tag
    ],
)
def test_anchors_parse_to_their_first_and_last_tag(
    value: str, start: tuple[int, str], end: tuple[int, str]
) -> None:
    assert parse_anchor(value) == AnchorRange(Anchor(*start), Anchor(*end))


@pytest.mark.parametrize(
    "value", [None, "", "42", "L42", "L42#", "L42#zzz", "#a3f", "L42#a3", "L42#a3f9", "L0#abc"]
)
def test_malformed_anchors_hold_no_tag(value: str | None) -> None:
    assert parse_anchor(value) is None


def test_a_tag_in_front_of_a_quoted_line_is_removed() -> None:
    assert strip_tag("L12#a3f +    x = 1") == "+    x = 1"
    assert strip_tag("  L12#a3f     x = 1") == "    x = 1"
    assert strip_tag("    x = L12#a3f") == "    x = L12#a3f"


def test_an_anchor_alone_places_the_finding_on_the_tagged_lines(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    shown = tags_shown(change[BILLING])
    sides = new_sides(change[BILLING])
    one = place(sides, candidate(anchor=shown[LINES["divide"]]))
    assert isinstance(one, Placement) and one.placed_by is PlacedBy.ANCHOR
    assert (one.start_line, one.end_line) == (16, 16)
    assert one.existing_code == "    return total_price / len(items)"
    both = place(sides, candidate(anchor=f"{shown[19]}-{shown[22]}", start_line=3, end_line=4))
    assert isinstance(both, Placement)  # the anchor wins over line numbers
    assert (both.start_line, both.end_line, both.placed_by) == (19, 22, PlacedBy.ANCHOR)


def test_a_miscounted_tag_finds_its_hash_nearby(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    sides = new_sides(change[BILLING])
    digest = line_hash("    return items[len(items)]")
    outcome = place(sides, candidate(anchor=f"L36#{digest}"))  # the line is 39
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.placed_by) == (39, PlacedBy.ANCHOR)
    far = place(sides, candidate(anchor=f"L{39 - 11}#{digest}"))  # beyond reach: stale
    assert far is DropReason.UNPLACED  # not put on line 28, which the hash says is not meant


def test_a_stale_anchor_falls_back_to_the_quoted_code(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    sides = new_sides(change[BILLING])
    stale = f"L26#{(int(line_hash(SQL), 16) + 1) % 4096:03x}"  # no line near 26 has it
    code = "    return total_price / len(items)"
    outcome = place(sides, candidate(anchor=stale, existing_code=code))
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.placed_by) == (16, PlacedBy.EXACT)


def test_a_stale_anchor_alone_is_relocated_near_its_number(
    change: dict[str, FileDiff], candidate: Make, wire: WireServer, send_to: SendTo
) -> None:
    wrong = (int(line_hash("    handle = open(path)"), 16) + 1) % 4096
    assert place(new_sides(change[BILLING]), candidate(anchor=f"L20#{wrong:03x}")) is (
        DropReason.UNPLACED
    )
    answer = [{"id": "c-0", "existing_code": "    handle = open(path)"}]
    wire.script("openai", [Text(json.dumps(answer))])
    found = relocate_file(
        change[BILLING], [candidate(anchor=f"L20#{wrong:03x}")], send_to("openai")
    )
    (placed,) = found.placed
    assert (placed.start_line, placed.placed_by) == (20, PlacedBy.RELOCATION)
    asked = wire.requests("openai")[0].body["messages"][1]["content"]
    assert '"start_line": 20' in asked  # the tag's number tells the model where to look


def test_anchor_and_quoted_code_that_disagree_place_by_the_code(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    shown = tags_shown(change[BILLING])
    sides = new_sides(change[BILLING])
    outcome = place(sides, candidate(anchor=shown[16], existing_code=SQL))
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.placed_by) == (LINES["sql"], PlacedBy.EXACT)
    on_context = "def apply_discount(amount, percent):"  # the code is an unchanged line
    assert place(sides, candidate(anchor=shown[16], existing_code=on_context)) is (
        DropReason.UNCHANGED_LINE
    )


def test_quoted_code_that_agrees_keeps_the_anchor(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    shown = tags_shown(change[BILLING])
    sides = new_sides(change[BILLING])
    repeated = "        return None"  # on lines 32 and 38: the anchor says which
    second = place(sides, candidate(anchor=shown[38], existing_code=repeated, start_line=30))
    assert isinstance(second, Placement)
    assert (second.start_line, second.placed_by) == (38, PlacedBy.ANCHOR)
    wider = "    if not items:\n        return None\n    return items[len(items)]"
    partly = place(sides, candidate(anchor=shown[39], existing_code=wider))
    assert isinstance(partly, Placement)  # the quote overlaps the anchored line
    assert (partly.start_line, partly.end_line, partly.placed_by) == (39, 39, PlacedBy.ANCHOR)
    nowhere = place(sides, candidate(anchor=shown[20], existing_code="handle = open(p, 'rb')"))
    assert isinstance(nowhere, Placement)  # a paraphrase found nowhere cannot contradict it
    assert (nowhere.start_line, nowhere.placed_by) == (20, PlacedBy.ANCHOR)


def test_an_anchor_on_unchanged_lines_is_not_moved_by_line_numbers(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    shown = tags_shown(change[BILLING])
    sides = new_sides(change[BILLING])
    outcome = place(sides, candidate(anchor=f"{shown[10]}-{shown[11]}", start_line=16))
    assert outcome is DropReason.UNCHANGED_LINE
    spans = place(sides, candidate(anchor=f"{shown[11]}-{shown[14]}"))
    assert isinstance(spans, Placement)  # overlaps added lines: placed as tagged
    assert (spans.start_line, spans.end_line) == (11, 14)


def test_a_malformed_anchor_is_ignored(change: dict[str, FileDiff], candidate: Make) -> None:
    sides = new_sides(change[BILLING])
    code = "    handle = open(path)"
    outcome = place(sides, candidate(anchor="line 5", existing_code=code, start_line=5))
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.placed_by) == (LINES["open"], PlacedBy.EXACT)


def test_code_quoted_with_its_tags_is_found_without_them(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    shown = tags_shown(change["app/worker.py"])
    quoted = f"{shown[9]} +    def increment(self):\n{shown[10]} +        current = self.value"
    outcome = place(new_sides(change["app/worker.py"]), candidate(existing_code=quoted))
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.end_line, outcome.placed_by) == (9, 10, PlacedBy.MARKERS)


def test_code_comment_takes_an_anchor_and_findings_keep_their_method(
    change: dict[str, FileDiff],
) -> None:
    shown = tags_shown(change[BILLING])
    finding = {
        "severity": "high",
        "category": "correctness",
        "file": BILLING,
        "anchor": shown[16],
        "title": "Division by zero",
        "problem": "Empty lists divide by zero.",
        "evidence": "len(items) is 0",
        "suggestion": "Guard it.",
        "confidence": 0.9,
    }
    anchored = candidate_from({"finding": finding}, BILLING, 0)
    assert anchored.anchor == shown[16]
    assert candidate_from({"finding": {**finding, "anchor": 16}}, BILLING, 0).anchor is None
    quoted = candidate_from(
        {"finding": {**finding, "anchor": None, "existing_code": "handle = open(path)"}}, BILLING, 0
    )
    found = relocate_file(change[BILLING], [anchored, quoted], no_model)
    final = finalize([found], ReviewSettings())
    assert [(f.start_line, f.placed_by) for f in final.findings] == [
        (16, PlacedBy.ANCHOR),
        (20, PlacedBy.WHITESPACE),  # quoted without its indentation
    ]


def test_the_report_schema_names_every_placement_method() -> None:
    finding = report_schema()["$defs"]["finding"]
    assert finding["properties"]["placed_by"]["enum"] == [method.value for method in PlacedBy]
    assert "placed_by" in finding["required"]


def test_a_dropped_candidate_says_what_was_wrong_with_its_anchor(
    change: dict[str, FileDiff], candidate: Make, wire: WireServer, send_to: SendTo
) -> None:
    wrong = (int(line_hash("    handle = open(path)"), 16) + 1) % 4096
    wire.script("openai", [Text("[]")])  # relocation places neither
    found = relocate_file(
        change[BILLING],
        [candidate(anchor=f"L20#{wrong:03x}"), candidate(anchor="line 20", start_line=None)],
        send_to("openai"),
    )
    assert not found.placed
    assert [d.detail for d in found.dropped] == [
        f"anchor 'L20#{wrong:03x}' is stale: no line near it has its hash; not found in the"
        " change; relocation did not place it",
        "anchor 'line 20' holds no tag (L<line>#<hash>); not found in the change; relocation"
        " did not place it",
    ]
