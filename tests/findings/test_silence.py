"""The silence stage after finalize: suppression comments read from a real change, suppressions
the change adds (honoured or not), dismissals from the repository's file, the trusted ref and
the home; the fingerprint through edits above a finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.errors import ConfigError
from reviewflow.findings import finalize, group_candidates, relocate_file
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import DropReason
from reviewflow.findings.silence import read_suppressions, silence, silenced_line
from reviewflow.review.reader import Snapshot
from reviewflow.rules.dismissals import (
    REPOSITORY_FILE,
    Dismissal,
    Dismissed,
    load_dismissed,
    render_dismissals,
)
from tests.findings.conftest import commit_change, make_candidate, no_model
from tests.gitutil import GitRepo

BASE = """def load(path):
    # reviewflow: ignore legacy loader, replaced next quarter
    return open(path).read()


def average_price(items):
    return 0
"""
NEW = """def load(path):
    # reviewflow: ignore legacy loader, replaced next quarter
    handle = open(path)
    return handle.read()


def average_price(items):
    total_price = sum(item.price for item in items)
    # reviewflow: ignore[correctness] callers never pass an empty list
    return total_price / len(items)
"""
PLAIN = NEW.replace("reviewflow: ignore", "note")
PATH = "app/shop.py"
DIVIDE = make_candidate(path=PATH, file=PATH, existing_code="    return total_price / len(items)")
OPEN = make_candidate(
    path=PATH, file=PATH, existing_code="    handle = open(path)", title="Handle never closed"
)


def _finalized(repo: GitRepo, base: str = BASE, new: str = NEW) -> tuple[Finalized, dict]:
    change = commit_change(repo, {PATH: base}, {PATH: new})
    groups, outside = group_candidates([DIVIDE, OPEN], change)
    files = [relocate_file(change[path], group, no_model) for path, group in groups.items()]
    final = finalize(files, ReviewSettings(), outside)
    assert len(final.findings) == 2
    return final, {f.path: f.changed_lines for f in files if f.path}


def test_comments_there_before_are_honoured_and_ones_the_change_adds_are_reported(
    repo: GitRepo,
) -> None:
    final, added = _finalized(repo)
    snapshot = Snapshot(repo_root=str(repo.root), ref=repo.head())
    found, notes = read_suppressions(snapshot, added, [f.path for f in final.findings])
    assert notes == []
    assert [(s.line, s.added) for s in found[PATH]] == [(2, False), (9, True)]
    by_title = {f.title: f for f in final.findings}

    local = silence(final, found, Dismissed(), honour_new=True)
    assert local.findings == ()
    assert {(d.title, d.reason, d.detail) for d in local.dropped} == {
        (
            "Handle never closed",
            DropReason.SUPPRESSED,
            f"{PATH}:2 reviewflow: ignore: legacy loader, replaced next quarter",
        ),
        (
            "Division by zero",
            DropReason.SUPPRESSED,
            f"{PATH}:9 reviewflow: ignore[correctness] (added by this change): callers never "
            "pass an empty list",
        ),
    }
    divide = by_title["Division by zero"]
    assert [(w.code, w.path, w.message) for w in local.warnings] == [
        (
            "suppression_added",
            PATH,
            f'line 9 adds `reviewflow: ignore[correctness]`, which silences {divide.id} "Division '
            'by zero" (review.honour_new_suppressions is true)',
        )
    ]
    assert silenced_line(local.dropped, local.warnings) == (
        "2 suppressed (1 by a comment this change adds), 0 dismissed"
    )

    ci = silence(final, found, Dismissed(), honour_new=False)
    assert [f.title for f in ci.findings] == ["Division by zero"]  # still reported
    assert [d.title for d in ci.dropped if d.reason is DropReason.SUPPRESSED] == [
        "Handle never closed"
    ]
    assert [w.code for w in ci.warnings] == ["suppression_not_honoured"]
    assert "a change cannot silence its own findings" in ci.warnings[0].message
    assert silenced_line(ci.dropped, ci.warnings) == (
        "1 suppressed, 0 dismissed, 1 not silenced by a comment this change adds "
        "(review.honour_new_suppressions is false)"
    )


def test_the_working_tree_is_read_for_a_workspace_review(repo: GitRepo) -> None:
    _, added = _finalized(repo)
    (repo.root / PATH).write_text(NEW.replace("# reviewflow: ignore legacy", "# legacy"))
    found, _ = read_suppressions(Snapshot(repo_root=str(repo.root)), added, [PATH])
    assert [s.line for s in found[PATH]] == [9]
    missing, notes = read_suppressions(Snapshot(repo_root=str(repo.root)), {}, ["gone.py"])
    assert missing == {} and [n.code for n in notes] == ["suppressions_unread"]


def test_honour_new_suppressions_defaults_to_local_only() -> None:
    assert ReviewSettings().honours_new_suppressions(ci=False)
    assert not ReviewSettings().honours_new_suppressions(ci=True)
    assert ReviewSettings(honour_new_suppressions=True).honours_new_suppressions(ci=True)
    assert not ReviewSettings(honour_new_suppressions=False).honours_new_suppressions(ci=False)


def _dismissal(fingerprint: str, **fields: str) -> Dismissal:
    return Dismissal(fingerprint=fingerprint, id="F" + fingerprint[:12], **fields)


def test_dismissed_fingerprints_are_dropped_with_who_and_why(repo: GitRepo) -> None:
    final, _ = _finalized(repo, BASE, PLAIN)
    divide = next(f for f in final.findings if f.title == "Division by zero")
    entry = _dismissal(
        divide.fingerprint, by="Ann <ann@example.invalid>", at="2026-12-01T10:00:00Z"
    )
    dismissed = Dismissed(
        entries={
            divide.fingerprint: entry.model_copy(update={"reason": "empty carts never get here"})
        },
        sources={divide.fingerprint: REPOSITORY_FILE},
    )
    out = silence(final, {}, dismissed, honour_new=True)
    assert [f.title for f in out.findings] == ["Handle never closed"]
    assert [(d.reason, d.detail) for d in out.dropped] == [
        (
            DropReason.DISMISSED,
            "dismissed in .reviewflow/dismissed.json by Ann <ann@example.invalid> on 2026-12-01: "
            "empty carts never get here",
        )
    ]


def test_the_fingerprint_survives_lines_added_above(repo: GitRepo) -> None:
    final, _ = _finalized(repo, BASE, PLAIN)
    before = {f.title: (f.fingerprint, f.start_line) for f in final.findings}
    shifted = '"""Shop."""\n\nimport os\n\nLIMIT = 3\n\n\n' + PLAIN
    again, _ = _finalized(repo, BASE, shifted)
    after = {f.title: (f.fingerprint, f.start_line) for f in again.findings}
    for title, (print_, line) in before.items():
        assert after[title] == (print_, line + 7)


FP_A, FP_B, FP_C = "a" * 64, "b" * 64, "c" * 64


def test_load_reads_the_trusted_ref_never_the_change(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("app.py", "x = 1\n")
    repo.write(REPOSITORY_FILE, render_dismissals([_dismissal(FP_A, path="app.py")]))
    base = repo.commit("base")
    repo.write(REPOSITORY_FILE, render_dismissals([_dismissal(FP_A), _dismissal(FP_B)]))
    repo.commit("the change dismisses its own finding")
    home = tmp_path / "home"
    home.mkdir()
    mine = _dismissal(FP_C, repository=str(repo.root))
    elsewhere = _dismissal(FP_B, repository="/srv/other")
    (home / "dismissed.json").write_text(render_dismissals([mine, elsewhere]))

    trusted = load_dismissed(repo.root, base, home)
    assert set(trusted.entries) == {FP_A, FP_C}
    assert trusted.sources[FP_A] == f"{REPOSITORY_FILE}@{base[:12]}"
    assert trusted.sources[FP_C] == str(home / "dismissed.json")
    assert set(load_dismissed(repo.root, None, home).entries) == {FP_A, FP_B, FP_C}


def test_a_bad_file_is_one_line_naming_it(repo: GitRepo, tmp_path: Path) -> None:
    repo.write(REPOSITORY_FILE, '{"version": 1, "dismissed": [{"fingerprint": "F12"}]}')
    with pytest.raises(ConfigError) as err:
        load_dismissed(repo.root, None, tmp_path)
    assert str(err.value).startswith("invalid dismissals file .reviewflow/dismissed.json: ")
    assert str(err.value).endswith(
        "'dismissed[0].fingerprint': must be a finding's fingerprint (64 hex digits)"
    )
    repo.write(REPOSITORY_FILE, "{nope")
    with pytest.raises(ConfigError, match="not JSON"):
        load_dismissed(repo.root, None, tmp_path)


def test_the_file_is_stable_and_sorted() -> None:
    entries = [
        _dismissal(FP_B, path="b.py"),
        _dismissal(FP_A, path="z.py"),
        _dismissal(FP_C, path="b.py"),
    ]
    text = render_dismissals(entries)
    assert text == render_dismissals(reversed(entries))
    assert [e["fingerprint"] for e in json.loads(text)["dismissed"]] == [FP_B, FP_C, FP_A]
    assert text.endswith("}\n") and text.startswith('{\n  "version": 1,\n  "dismissed": [\n')


def test_a_dismissal_covers_every_member_of_its_cluster_both_ways(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Recorded for another member whose cluster holds this finding (the other pass's
    placement was kept and dismissed), or for a fingerprint this finding's cluster holds:
    dropped as dismissed, `dismissed_as` naming the dismissal's finding. Its own entry comes
    first; a cluster's fingerprint that is not one is a one-line error."""
    final, _ = _finalized(repo, BASE, PLAIN)
    divide = next(f for f in final.findings if f.title == "Division by zero")
    other = Dismissal(
        fingerprint=FP_B, id="F" + FP_B[:12], cluster_fingerprints=(divide.fingerprint,)
    )
    text = render_dismissals([other])
    assert json.loads(text)["dismissed"][0]["cluster_fingerprints"] == [divide.fingerprint]
    repo.write(REPOSITORY_FILE, text)
    home = tmp_path / "home"
    dismissed = load_dismissed(repo.root, None, home)
    out = silence(final, {}, dismissed, honour_new=True)
    [drop] = out.dropped
    assert (drop.title, drop.reason, drop.dismissed_as) == (divide.title, "dismissed", FP_B)
    assert drop.detail == (
        f"dismissed in .reviewflow/dismissed.json (recorded for F{FP_B[:12]}: this finding as "
        "another pass placed it)"
    )

    repo.write(REPOSITORY_FILE, render_dismissals([_dismissal(FP_C, reason="seen")]))
    clustered = final.model_copy(
        update={
            "findings": tuple(
                f.model_copy(update={"cluster_fingerprints": (FP_C,)}) if f is divide else f
                for f in final.findings
            )
        }
    )
    [drop] = silence(clustered, {}, load_dismissed(repo.root, None, home), True).dropped
    assert (drop.dismissed_as, drop.detail) == (
        FP_C,
        f"dismissed in .reviewflow/dismissed.json: seen (recorded for F{FP_C[:12]}: this "
        "finding as another pass placed it)",
    )

    own = _dismissal(divide.fingerprint, reason="its own")
    repo.write(REPOSITORY_FILE, render_dismissals([other, own]))
    [drop] = silence(final, {}, load_dismissed(repo.root, None, home), True).dropped
    assert (drop.dismissed_as, drop.detail) == (
        None,
        "dismissed in .reviewflow/dismissed.json: its own",
    )

    repo.write(REPOSITORY_FILE, text.replace(divide.fingerprint, "F12"))
    with pytest.raises(ConfigError, match=r"'dismissed\[0\]\.cluster_fingerprints\.0': "):
        load_dismissed(repo.root, None, home)
