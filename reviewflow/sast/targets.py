"""The new side of each reviewed file, as semgrep will scan it.

Commit and range changes read the reviewed commit (one `git cat-file --batch` for all files);
workspace and diff changes read the working tree, as the tools do. A working-tree file that
does not hold what the diff says its new side is (a diff given on stdin that was never applied,
say) is scanned as the diff's own new-side lines, each at its line number and blank lines
between, so every result still lands on the line the diff numbers.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.models import FileDiff
from reviewflow.git.runner import git_command, git_env
from reviewflow.select.scope import Scope


@dataclass(frozen=True, slots=True)
class Target:
    """One file to scan: its path, new-side bytes and added line numbers."""

    path: str
    content: bytes
    added: frozenset[int]
    from_hunks: bool = False  # the content was rebuilt from the diff's hunks


def new_side_targets(scope: Scope) -> list[Target]:
    """Every kept file with added lines (link text aside), with its new-side content."""
    files = [
        kept.file for kept in scope.selection.kept if kept.file.added and not kept.file.is_symlink
    ]
    root, ref = scope.change.repo_root, scope.change.snapshot_ref
    paths = [diff.path for diff in files]
    contents = read_at_ref(root, ref, paths) if ref else read_worktree(root, paths)
    targets = []
    for diff in files:
        data = contents.get(diff.path)
        if data is not None and (ref is not None or matches_diff(data, diff)):
            targets.append(Target(diff.path, data, diff.changed_lines))
        else:
            targets.append(Target(diff.path, from_hunks(diff), diff.changed_lines, True))
    return targets


def read_at_ref(root: Path, ref: str, paths: Sequence[str]) -> dict[str, bytes]:
    """The content of each path at `ref` (absent ones left out), in one git process."""
    if not paths:
        return {}
    request = b"".join(f"{ref}:{path}\n".encode("utf-8", "surrogateescape") for path in paths)
    try:
        result = subprocess.run(
            git_command(["cat-file", "--batch"]),
            cwd=root,
            env=git_env(),
            input=request,
            capture_output=True,
            check=False,
        )
    except OSError as err:
        raise GitError(f"cannot run git: {err.strerror or err}") from None
    if result.returncode != 0:
        raise GitError("git cat-file --batch failed")
    return _parse_batch(result.stdout, paths)


def _parse_batch(out: bytes, paths: Sequence[str]) -> dict[str, bytes]:
    contents: dict[str, bytes] = {}
    at = 0
    for path in paths:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:  # "<name> missing" (or ambiguous): not in the commit
            continue
        size = int(header[2])
        if header[1] == b"blob":
            contents[path] = out[at : at + size]
        at += size + 1
    return contents


def read_worktree(root: Path, paths: Sequence[str]) -> dict[str, bytes]:
    """The working tree's content of each path that is a regular file there."""
    contents = {}
    for path in paths:
        target = root / path
        if target.is_file() and not target.is_symlink():
            try:
                contents[path] = target.read_bytes()
            except OSError:
                continue
    return contents


def matches_diff(data: bytes, diff: FileDiff) -> bool:
    """Whether `data` holds every new-side line of the diff's hunks at its line number."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    for hunk in diff.hunks:
        for line in hunk.lines:
            if line.new_no is None:
                continue
            if line.new_no > len(lines) or lines[line.new_no - 1].rstrip("\r") != line.text.rstrip(
                "\r"
            ):
                return False
    return True


def from_hunks(diff: FileDiff) -> bytes:
    """The diff's new-side lines at their line numbers, blank lines between them."""
    numbered = {
        line.new_no: line.text
        for hunk in diff.hunks
        for line in hunk.lines
        if line.new_no is not None
    }
    lines = [numbered.get(number, "") for number in range(1, max(numbered, default=0) + 1)]
    return "\n".join([*lines, ""]).encode("utf-8", "surrogateescape")
