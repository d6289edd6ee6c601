"""Deterministic placement (steps 1-2) and grouping by the path the model named."""

from __future__ import annotations

from collections.abc import Callable

from reviewflow.findings import group_candidates, relocate_file
from reviewflow.findings.models import DropReason
from reviewflow.findings.normalize import normalize_category, normalize_path
from reviewflow.findings.placement import Placement, locate_code, new_sides, place
from reviewflow.git.models import FileDiff, FileStatus
from reviewflow.models import Candidate, Category
from tests.findings.conftest import LINES, SendTo, make_candidate, no_model
from tests.wire_server import Text, WireServer

Make = Callable[..., Candidate]


def test_right_code_wrong_lines_lands_on_the_real_line(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    code = "    return total_price / len(items)"
    found = relocate_file(
        change["app/billing.py"], [candidate(existing_code=code, start_line=3)], no_model
    )
    (placed,) = found.placed
    assert (placed.id, placed.start_line, placed.end_line) == ("c-0", LINES["divide"], 16)
    assert placed.placed_by == "exact" and placed.existing_code == code
    assert found.complete and not found.records


def test_reindented_multiline_code_is_found_with_whitespace_normalized(
    change: dict[str, FileDiff],
) -> None:
    sides = new_sides(change["app/billing.py"])
    quoted = "def load_invoice(path):\nhandle   =  open(path)\n\n  data = handle.read()\r\n"
    placement = locate_code(sides, quoted, hint=90)
    assert isinstance(placement, Placement)
    assert (placement.start_line, placement.end_line) == (19, 21)
    assert placement.placed_by == "whitespace"
    assert placement.existing_code.splitlines()[1] == "    handle = open(path)"


def test_the_occurrence_nearest_the_hint_wins(change: dict[str, FileDiff]) -> None:
    sides = new_sides(change["app/billing.py"])
    code = "    if not items:\n        return None"
    assert locate_code(sides, code, hint=36) == Placement(37, 38, code, "exact")
    assert locate_code(sides, code, hint=1) == Placement(31, 32, code, "exact")
    assert locate_code(sides, code, hint=None) == Placement(31, 32, code, "exact")


def test_a_quoted_diff_is_found_without_its_markers(change: dict[str, FileDiff]) -> None:
    sides = new_sides(change["app/worker.py"])
    quoted = "     def increment(self):\n-        pass\n+        current = self.value\n"
    assert locate_code(sides, quoted, None) == Placement(
        9, 10, "    def increment(self):\n        current = self.value", "markers"
    )


def test_one_line_of_code_is_found_inside_a_line(change: dict[str, FileDiff]) -> None:
    sides = new_sides(change["app/billing.py"])
    expression = "total_price /  len(items)"
    assert locate_code(sides, expression, 3) == Placement(
        16, 16, "    return total_price / len(items)", "partial"
    )
    assert locate_code(sides, "items[0]", 3) is DropReason.UNPLACED  # too short to trust
    assert locate_code(sides, "amount * percent / 100", 3) is DropReason.UNCHANGED_LINE
    assert locate_code(sides, "len(items)\nx = 1", 3) is DropReason.UNPLACED


def test_code_only_on_context_lines_is_an_unchanged_line(change: dict[str, FileDiff]) -> None:
    sides = new_sides(change["app/billing.py"])
    assert locate_code(sides, "def apply_discount(amount, percent):", 10) is (
        DropReason.UNCHANGED_LINE
    )
    assert locate_code(sides, "print('not in the change')", 10) is DropReason.UNPLACED
    assert locate_code(sides, "\n  \n", 10) is DropReason.UNPLACED


def test_code_on_unchanged_lines_is_not_moved_by_its_line_range(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    sides = new_sides(change["app/worker.py"])
    quoted = candidate(existing_code="        self.value = 0", start_line=6, end_line=8)
    assert place(sides, quoted) is DropReason.UNCHANGED_LINE
    paraphrased = candidate(existing_code="self.value = 0  # reset", start_line=6, end_line=8)
    assert place(sides, paraphrased) == Placement(
        6, 8, "        self.value = 0\n        self.lock = threading.Lock()\n", "lines"
    )


def test_a_window_may_start_on_context_if_it_reaches_an_added_line(
    change: dict[str, FileDiff],
) -> None:
    sides = new_sides(change["app/worker.py"])
    code = "        self.value = 0\n        self.lock = threading.Lock()"
    assert locate_code(sides, code, None) == Placement(6, 7, code, "exact")


def test_a_line_range_overlapping_an_added_line_is_cut_to_its_hunk(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    sides = new_sides(change["app/worker.py"])
    outcome = place(sides, candidate(start_line=5, end_line=400, existing_code="made up"))
    assert isinstance(outcome, Placement)
    assert (outcome.start_line, outcome.end_line, outcome.placed_by) == (5, 11, "lines")
    reversed_range = place(sides, candidate(start_line=10, end_line=9))
    assert isinstance(reversed_range, Placement)
    assert (reversed_range.start_line, reversed_range.end_line) == (9, 10)
    assert reversed_range.existing_code == "    def increment(self):\n        current = self.value"


def test_lines_outside_added_lines_are_unchanged_or_unplaced(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    sides = new_sides(change["app/worker.py"])
    assert place(sides, candidate(start_line=2)) is DropReason.UNCHANGED_LINE
    assert place(sides, candidate(end_line=0)) is DropReason.UNPLACED
    assert place(sides, candidate()) is DropReason.UNPLACED


def test_ids_follow_candidate_order_and_bad_fields_are_dropped_before_placing(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    candidates = [
        candidate(category="style", existing_code="    return items[0]"),
        candidate(existing_code="    return items[0]"),
        candidate(severity="urgent", start_line=39),
        candidate(confidence=None, start_line=39),
        candidate(title=" ", start_line=39),
        candidate(severity=" HIGH ", category="Bug", existing_code="    return items[len(items)]"),
    ]
    found = relocate_file(change["app/billing.py"], candidates, no_model)
    assert [(p.id, p.start_line) for p in found.placed] == [("c-1", 33), ("c-5", 39)]
    assert [d.reason for d in found.dropped] == [
        DropReason.UNKNOWN_CATEGORY,
        DropReason.INVALID_SEVERITY,
        DropReason.INVALID_CONFIDENCE,
        DropReason.INCOMPLETE,
    ]
    assert found.dropped[0].detail == (
        "category 'style'; accepted: correctness, security, concurrency, performance, "
        "compatibility, tests"
    )


def test_no_added_lines_means_no_relocation_request() -> None:
    empty = FileDiff(path="gone.py", old_path="gone.py", status=FileStatus.DELETED)
    found = relocate_file(empty, [make_candidate(file="gone.py", start_line=1)], no_model)
    assert not found.placed
    assert [(d.reason, d.detail) for d in found.dropped] == [
        (DropReason.UNPLACED, "line 1 is past the end of the change; no added lines")
    ]


def test_lines_past_the_end_of_the_change_are_unplaced_not_unchanged(
    change: dict[str, FileDiff], candidate: Make, wire: WireServer, send_to: SendTo
) -> None:
    """A model that names lines 99999-100000 named lines nothing says exist."""
    far = candidate(start_line=99999, end_line=100000)
    assert place(new_sides(change["app/worker.py"]), far) is DropReason.UNPLACED
    wire.script("openai", [Text("[]")])  # relocation finds nothing either
    (drop,) = relocate_file(change["app/worker.py"], [far], send_to("openai")).dropped
    assert (drop.reason, drop.detail) == (
        DropReason.UNPLACED,
        "lines 99999-100000 are past the end of the change; relocation did not place it",
    )


def test_group_by_the_named_path_normalized(change: dict[str, FileDiff], candidate: Make) -> None:
    candidates = [
        candidate(file="./app/worker.py", title="a"),
        candidate(file="b/app/billing.py", title="b"),
        candidate(file="app\\billing.py", title="c"),
        candidate(file="", title="d"),
        candidate(file="app/ghost.py", title="e"),
        candidate(file="/etc/passwd", title="f"),
    ]
    groups, outside = group_candidates(candidates, change)
    assert {path: [c.title for c in cs] for path, cs in groups.items()} == {
        "app/worker.py": ["a"],
        "app/billing.py": ["b", "c", "d"],
    }
    assert [(d.path, d.reason) for d in outside] == [
        ("app/ghost.py", DropReason.OUTSIDE_CHANGE),
        ("/etc/passwd", DropReason.OUTSIDE_CHANGE),
    ]


def test_a_prefix_stays_when_the_prefixed_path_is_reviewed() -> None:
    assert normalize_path("a/b.py", {"a/b.py", "b.py"}) == "a/b.py"
    assert normalize_path("a/b.py", {"b.py"}) == "b.py"
    assert normalize_path(".//x//y.py", set()) == "x/y.py"


def test_category_aliases() -> None:
    assert normalize_category("Bug") is Category.CORRECTNESS
    assert normalize_category("perf") is Category.PERFORMANCE
    assert normalize_category("Race Condition") is Category.CONCURRENCY
    assert normalize_category(" SECURITY ") is Category.SECURITY
    assert normalize_category("vulnerability") is Category.SECURITY
    assert normalize_category("style") is None
