"""`reviewflow rules check PATH`: the rule and the filter decision for one path."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reviewflow.errors import GitError
from reviewflow.git.models import FileDiff, FileStatus
from reviewflow.git.repo import find_repo_root
from reviewflow.report.preview import instructions_line, rule_record
from reviewflow.report.textsafe import json_safe, terminal_text
from reviewflow.rules.instructions import load_instructions
from reviewflow.rules.loader import load_rules
from reviewflow.select.filtering import select_files


def check_path(
    repo: Path,
    path: str,
    custom_rule: str | None,
    home: Path,
    env: Mapping[str, str],
    instructions: str | None = None,
) -> dict[str, Any]:
    """Resolve the rule for `path` as a modified file, reading the working tree's rules (and
    the `instructions` file, as outside CI)."""
    try:
        root = find_repo_root(repo)
    except GitError:
        root = repo.resolve()
    custom = Path(custom_rule) if custom_rule else None
    rules = load_rules(root, home, custom, None)
    guidance, notes = load_instructions(instructions, root, None, ())
    rules.warnings.extend(notes)
    probe = FileDiff(path=path.replace("\\", "/"), old_path=path, status=FileStatus.MODIFIED)
    selection = select_files([probe], rules)
    kept = selection.kept[0] if selection.kept else None
    excluded = selection.excluded[0] if selection.excluded else None
    result: dict[str, Any] = json_safe(
        {
            "path": probe.path,
            "repository": str(root),
            "reviewed": kept is not None,
            "reason": excluded.reason.value if excluded else None,
            "detail": excluded.detail if excluded else (kept.included_by if kept else None),
            "rule": rule_record(rules.resolve(probe.path)),
            "rules": rules.describe(),
            "instructions": guidance.record() if guidance else None,
            "warnings": [
                {"code": w.code, "message": w.message, "path": w.path} for w in rules.warnings
            ],
        }
    )
    return result


def render_check(result: dict[str, Any]) -> str:
    rule = result["rule"]
    decision = "reviewed" if result["reviewed"] else f"excluded ({result['reason']})"
    lines = [
        f"path:     {result['path']}",
        f"decision: {decision}",
        f"rule:     {rule['layer']} {rule['name'] or ''} from {rule['source']}".rstrip(),
        f"pattern:  {rule['pattern']}",
    ]
    if rule["reference"]:
        lines.append(f"text:     {rule['reference']}")
    if rule["merged_with"]:
        lines.append(f"merged:   system rule {rule['merged_with']}")
    if result["instructions"]:
        lines.append(f"instructions: {instructions_line(result['instructions'])}")
    lines.extend(f"warning:  {w['message']}" for w in result["warnings"])
    return terminal_text(lines)
