"""Incremental re-review on real repositories: which earlier findings a push touches, where the
others moved, and when the whole request is reviewed again."""

from __future__ import annotations

from pathlib import Path

from reviewflow.models import Severity
from reviewflow.publish.incremental import descends, renames, split_prior
from reviewflow.pullrequest.state import PriorFinding
from tests.gitutil import GitRepo

LINES = "".join(f"line{i}\n" for i in range(1, 31))


def _prior(path: str, start: int, end: int | None = None) -> PriorFinding:
    return PriorFinding(
        fingerprint=f"{path}:{start}".ljust(64, "0")[:64],
        severity=Severity.HIGH,
        path=path,
        start_line=start,
        end_line=end or start,
        title="t",
    )


def test_lines_a_push_touches_are_looked_at_again_and_the_others_move(repo: GitRepo) -> None:
    repo.write("a.py", LINES)
    repo.write("gone.py", LINES.replace("line", "gone"))
    repo.write("old.py", LINES.replace("line", "old"))
    old = repo.commit("first")
    lines = LINES.splitlines(keepends=True)
    lines[1:1] = ["new1\n", "new2\n"]  # two lines inserted after line 1
    lines[20 + 2] = "changed21\n"  # line 21 (now 23) changed
    repo.write("a.py", "".join(lines))
    repo.git("rm", "-q", "gone.py")
    repo.git("mv", "old.py", "renamed.py")
    new = repo.commit("push")
    prior = [
        _prior("a.py", 1),  # above the insertion: stays
        _prior("a.py", 10, 12),  # below it: moves down 2
        _prior("a.py", 20, 22),  # holds the changed line: looked at again
        _prior("gone.py", 5),  # its file deleted: looked at again
        _prior("old.py", 7),  # renamed, unchanged: follows the file
    ]
    carried, rereviewed = split_prior(repo.root, old, new, prior)
    assert [(f.path, f.start_line, f.end_line) for f in carried] == [
        ("a.py", 1, 1),
        ("a.py", 12, 14),
        ("renamed.py", 7, 7),
    ]
    assert rereviewed == (prior[2].fingerprint, prior[3].fingerprint)
    assert renames(repo.root, old, new) == {"renamed.py": "old.py"}


def test_an_insertion_inside_a_finding_looks_at_it_again(repo: GitRepo) -> None:
    repo.write("a.py", LINES)
    old = repo.commit("first")
    lines = LINES.splitlines(keepends=True)
    lines.insert(5, "inserted\n")  # after line 5
    repo.write("a.py", "".join(lines))
    new = repo.commit("push")
    carried, rereviewed = split_prior(repo.root, old, new, [_prior("a.py", 4, 7)])
    assert carried == () and len(rereviewed) == 1


def test_only_a_head_that_descends_without_merges_is_incremental(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("a.py", "a\n")
    first = repo.commit("first")
    repo.write("a.py", "b\n")
    second = repo.commit("second")
    assert descends(repo.root, first, second) and descends(repo.root, second, second)
    repo.git("checkout", "-q", "-b", "side", first)
    repo.write("b.py", "b\n")
    side = repo.commit("side")
    assert not descends(repo.root, second, side)  # a force-push
    assert not descends(repo.root, "0" * 40, second)  # a head this clone never had
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-edit", "side")
    assert not descends(repo.root, second, repo.head())  # the target merged in: everything
