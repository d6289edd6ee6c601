"""`code_comment` arguments as a `Candidate`, coerced as its docstring says (not validated)."""

from __future__ import annotations

import math
from typing import Any

from reviewflow.errors import ToolError
from reviewflow.models import Candidate

_TEXT_FIELDS = ("severity", "category", "title", "problem", "evidence", "suggestion")


def candidate_from(arguments: dict[str, Any], path: str, chunk: int) -> Candidate:
    """The candidate in `arguments["finding"]`; ToolError when there is no finding object."""
    finding = arguments.get("finding")
    if not isinstance(finding, dict):
        raise ToolError("code_comment needs a 'finding' object with the defect's fields")
    return Candidate(
        path=path,
        file=_text(finding.get("file")) or path,
        rule_id=_text(finding.get("rule_id")) or None,
        start_line=_line(finding.get("start_line")),
        end_line=_line(finding.get("end_line")),
        existing_code=_optional_text(finding.get("existing_code")),
        anchor=_optional_text(finding.get("anchor")),
        confidence=_number(finding.get("confidence")),
        chunk=chunk,
        **{name: _text(finding.get(name)) for name in _TEXT_FIELDS},
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _line(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
