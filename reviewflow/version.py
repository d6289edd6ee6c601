"""Version, commit and build time of this installation."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow import __version__


def version_info() -> dict[str, str]:
    """Build metadata: from reviewflow/_build.py (`make build-info`), else the source checkout."""
    try:
        from reviewflow import _build  # type: ignore[attr-defined]  # written at build time
    except ImportError:
        return {
            "version": __version__,
            "commit": _source_commit(),
            "build_time": "none (source checkout)",
        }
    return {"version": __version__, "commit": _build.COMMIT, "build_time": _build.BUILD_TIME}


def _source_commit() -> str:
    source = Path(__file__).resolve().parent.parent
    if not (source / ".git").exists():
        return "unknown"
    head = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
    )
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
