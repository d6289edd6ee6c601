"""Helpers for rule tests: SKILL.md fixtures and rules.json writers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SKILLS = {
    "python": ("language", ["*.py", "*.pyi"], 50, "PYTHON SYSTEM RULE"),
    "dockerfile": ("target", ["Dockerfile", "*.dockerfile"], 10, "DOCKER SYSTEM RULE"),
    "github-actions": ("target", [".github/workflows/*.{yml,yaml}"], 10, "GHA SYSTEM RULE"),
    "yaml": ("language", ["*.yml", "*.yaml"], 50, "YAML SYSTEM RULE"),
    "general": ("fallback", ["**"], 1000, "GENERAL SYSTEM RULE"),
}


def skill_text(name: str, kind: str, paths: list[str], priority: int | None, body: str) -> str:
    """A SKILL.md document."""
    lines = ["---", f"name: {name}", f"description: Rule {name}.", "metadata:", f"  kind: {kind}"]
    lines.append(f"  paths: {json.dumps(paths)}")
    if priority is not None:
        lines.append(f"  priority: {priority}")
    return "\n".join([*lines, "---", f"# {name}", "", body, ""])


def write_skills(root: Path, skills: dict[str, tuple[str, list[str], int | None, str]]) -> Path:
    """Write `<root>/<name>/SKILL.md` for each skill; return root."""
    for name, (kind, paths, priority, body) in skills.items():
        target = root / name / "SKILL.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(skill_text(name, kind, paths, priority, body), encoding="utf-8")
    return root


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as JSON to `path` (creating directories)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path
