"""Helpers for the Git tests: collecting a change from a real repository."""

from __future__ import annotations

import io
from pathlib import Path

from reviewflow.git.models import Change, ChangeSpec, DiffMode, FileDiff
from reviewflow.git.repo import collect_change
from tests.gitutil import GitRepo


def collect(
    repo: GitRepo | Path,
    mode: DiffMode = DiffMode.WORKSPACE,
    stdin: bytes | None = None,
    **fields: object,
) -> Change:
    """collect_change on a test repository."""
    root = repo.root if isinstance(repo, GitRepo) else repo
    spec = ChangeSpec(mode, **fields)  # type: ignore[arg-type]
    return collect_change(root, spec, io.BytesIO(stdin) if stdin is not None else None)


def by_path(change: Change | list[FileDiff]) -> dict[str, FileDiff]:
    """The files of a change keyed by path (asserting each path appears once)."""
    files = change.files if isinstance(change, Change) else change
    out = {f.path: f for f in files}
    assert len(out) == len(files), [f.path for f in files]
    return out


def texts(diff: FileDiff, kind: str) -> list[str]:
    """The texts of one kind of line across the hunks of a file."""
    return [ln.text for h in diff.hunks for ln in h.lines if ln.kind == kind]
