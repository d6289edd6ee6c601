"""Git as the reference reader: what `git apply --numstat -z` reads from the same bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow.git.models import FileDiff
from reviewflow.git.quoting import decode_path

Counts = dict[str, tuple[int, int] | None]


def git_numstat(data: bytes, strip: int, cwd: Path) -> Counts | None:
    """path -> (added, removed), None for binary, summed per path; None when Git refuses.

    A missing newline at the very end of the input is completed first (we accept it; Git
    calls the last hunk corrupt).
    """
    if data and not data.endswith(b"\n"):
        data += b"\n"
    result = subprocess.run(
        ["git", "apply", "--numstat", "-z", f"-p{strip}", "-"],
        input=data,
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    return read_numstat(result.stdout)


def read_numstat(out: bytes) -> Counts:
    """Parse `--numstat -z` output; a path listed twice (a type change) has its counts summed."""
    counts: Counts = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        added, removed, path = record.split(b"\t", 2)
        key = decode_path(path)
        if added == b"-":
            counts[key] = None
            continue
        before = counts.get(key) or (0, 0)
        counts[key] = (before[0] + int(added), before[1] + int(removed))
    return counts


def our_counts(files: list[FileDiff]) -> Counts:
    """The same shape from our parse."""
    return {f.path: None if f.binary else (f.added, f.removed) for f in files}
