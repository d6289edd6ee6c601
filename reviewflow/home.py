"""Where reviewflow keeps its config, cache, logs and managed server (light to import)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The reviewflow home: `REVIEWFLOW_HOME`, else `~/.reviewflow`."""
    env = os.environ if env is None else env
    override = env.get("REVIEWFLOW_HOME")
    return Path(override).expanduser() if override else Path.home() / ".reviewflow"
