"""Version, commit and build time of this installation."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow import __version__


def version_info() -> dict[str, str]:
    """Build metadata: from reviewflow/_build.py when the image or wheel wrote one, else Git."""
    try:
        from reviewflow import _build  # type: ignore[attr-defined]  # written at build time
    except ImportError:
        return {"version": __version__, "commit": _source_commit(), "build_time": "unknown"}
    return {"version": __version__, "commit": _build.COMMIT, "build_time": _build.BUILD_TIME}


def _source_commit() -> str:
    source = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not (source / ".git").exists():
        return "unknown"
    return result.stdout.strip()
