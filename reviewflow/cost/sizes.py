"""The size of each reviewed file in the snapshot the tools read (what a `file_read` returns)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from reviewflow.errors import GitError
from reviewflow.git.encoding import from_shown, shown
from reviewflow.git.runner import run_git
from reviewflow.review.reader import Snapshot

BATCH = 500  # paths per `git ls-tree` call


def file_sizes(snapshot: Snapshot, paths: Sequence[str]) -> dict[str, int | None]:
    """Bytes of each of `paths` in `snapshot` (None: not a readable file there)."""
    if snapshot.ref is None:
        return {path: _stat_size(snapshot, path) for path in paths}
    sizes: dict[str, int | None] = dict.fromkeys(paths)
    for start in range(0, len(paths), BATCH):
        sizes.update(_tree_sizes(snapshot, paths[start : start + BATCH]))
    return sizes


def _stat_size(snapshot: Snapshot, path: str) -> int | None:
    try:
        return os.stat(snapshot.root / from_shown(path)).st_size
    except OSError:
        return None


def _tree_sizes(snapshot: Snapshot, paths: Sequence[str]) -> dict[str, int | None]:
    """`git ls-tree -l` of `paths` at the snapshot's ref: blob sizes ("-" for others)."""
    names = [from_shown(path) for path in paths]  # a name shown with `\\xNN`, as Git has it
    args = ["ls-tree", "-l", "-z", "--full-tree", str(snapshot.ref), "--", *names]
    try:
        out = run_git(snapshot.root, args, options=("--literal-pathspecs",))
    except GitError:  # not listable here: the sizes stay unknown (the estimate's default read)
        return {}
    sizes: dict[str, int | None] = {}
    for entry in out.split(b"\0"):
        if b"\t" not in entry:
            continue
        meta, name = entry.split(b"\t", 1)
        size = meta.split()[-1]
        sizes[shown(os.fsdecode(name))] = int(size) if size.isdigit() else None
    return sizes
