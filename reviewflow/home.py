"""Where reviewflow keeps its config, cache, logs and managed server (light to import)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The reviewflow home: `REVIEWFLOW_HOME`, else `~/.reviewflow`."""
    env = os.environ if env is None else env
    override = env.get("REVIEWFLOW_HOME")
    return Path(override).expanduser() if override else Path.home() / ".reviewflow"


# The home's folders that hold the user's data: repository source read by the tools (cached
# answers, mirrors), findings (reports), logs, and the managed server's database.
PRIVATE_FOLDERS = ("", "cache", "cache/results", "cache/repos", "reports", "logs", "prefect")


def secure_home(home: Path) -> list[str]:
    """Tighten the home and its data folders to the user alone (0700) where they are looser;
    what could not be tightened, as one-line notes (a folder another user owns, say)."""
    notes = []
    for name in PRIVATE_FOLDERS:
        folder = home / name if name else home
        try:
            info = folder.stat()
        except OSError:
            continue  # not there (yet): it is created private
        if not stat.S_ISDIR(info.st_mode) or not info.st_mode & 0o077:
            continue
        if info.st_uid != os.getuid():
            notes.append(f"{folder} belongs to another user and others can read it: not tightened")
            continue
        try:
            os.chmod(folder, stat.S_IMODE(info.st_mode) & 0o700)
        except OSError as exc:
            notes.append(f"cannot make {folder} private: {exc.strerror}")
    return notes
