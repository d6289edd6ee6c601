"""Incremental re-review: when the request's new head descends from the head the summary
recorded, only `old_head..new_head` is reviewed, and the earlier findings whose lines that
range does not touch are carried forward (their lines moved by what was added above them)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.models import FileDiff, FileStatus
from reviewflow.git.parse import parse_unified_diff
from reviewflow.git.runner import git_command, git_env, run_git
from reviewflow.pullrequest.state import PriorFinding


def descends(root: Path, old: str, new: str) -> bool:
    """Whether `new` has `old` in its history, with no merge commit in between (a merge of
    the target branch brings changes that are not the request's: review the whole range).
    An `old` this clone does not have (a force-push dropped it) does not descend."""
    result = subprocess.run(
        git_command(["merge-base", "--is-ancestor", old, new]),
        cwd=root,
        env=git_env(),
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        return False
    try:
        merges = run_git(root, ["rev-list", "--merges", f"{old}..{new}"])
    except GitError:
        return False
    return not merges.strip()


def split_prior(
    root: Path, old: str, new: str, prior: Sequence[PriorFinding]
) -> tuple[tuple[PriorFinding, ...], tuple[str, ...]]:
    """Earlier findings `old..new` leaves alone (moved to their lines at `new`), and the
    fingerprints of those whose lines it changed or whose file it deleted (re-reviewed)."""
    diff = run_git(root, ["diff", "-U0", "--no-color", "--find-renames", old, new])
    files = {f.old_path or f.path: f for f in parse_unified_diff(diff)}
    carried: list[PriorFinding] = []
    rereviewed: list[str] = []
    for finding in prior:
        moved = _moved(finding, files.get(finding.path))
        if moved is None:
            rereviewed.append(finding.fingerprint)
        else:
            carried.append(moved)
    return tuple(carried), tuple(rereviewed)


def _moved(finding: PriorFinding, change: FileDiff | None) -> PriorFinding | None:
    """`finding` at the new head, or None when the change touches its lines (or deletes it)."""
    if change is None:
        return finding
    if change.status is FileStatus.DELETED:
        return None
    shift = 0
    for hunk in change.hunks:
        first, last = hunk.old_start, hunk.old_start + hunk.old_count - 1
        if hunk.old_count == 0:  # lines inserted after old line `old_start`
            if finding.start_line <= hunk.old_start < finding.end_line:
                return None
            if hunk.old_start < finding.start_line:
                shift += hunk.new_count
            continue
        if first <= finding.end_line and last >= finding.start_line:
            return None
        if last < finding.start_line:
            shift += hunk.new_count - hunk.old_count
    return finding.model_copy(
        update={
            "path": change.path,
            "start_line": finding.start_line + shift,
            "end_line": finding.end_line + shift,
        }
    )


def renames(root: Path, base: str, head: str) -> dict[str, str]:
    """The request's renamed files, new path -> old path (`base...head`, renames found)."""
    out = run_git(
        root,
        ["diff", "-z", "--name-status", "--find-renames", "--diff-filter=R", f"{base}...{head}"],
    )
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    return {fields[i + 2]: fields[i + 1] for i in range(0, len(fields) - 2, 3)}
