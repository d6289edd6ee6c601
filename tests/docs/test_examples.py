"""Commands the docs and README give to copy: a Dask scheduler is never shown listening on every
interface (it runs whatever any client sends, unauthenticated)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _code_lines() -> list[tuple[str, str]]:
    found = []
    for path in SOURCES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(), flags=re.S):
            found += [(path.name, line) for line in block.replace("\\\n", " ").splitlines()]
    return found


def test_every_dask_scheduler_binds_a_private_host() -> None:
    schedulers = [(page, line) for page, line in _code_lines() if "dask scheduler" in line]
    assert {page for page, _ in schedulers} >= {"README.md", "deployments.md"}
    for page, line in schedulers:
        words = shlex.split(line.split("#")[0])
        assert "--host" in words, f"{page}: {line}"
        host = words[words.index("--host") + 1]
        assert host not in {"0.0.0.0", "::", "*", ""}, f"{page}: {line}"
