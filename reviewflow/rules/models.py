"""What rule resolution produces. Implemented by reviewflow.rules.loader."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RuleLayer(StrEnum):
    CUSTOM = "custom"
    PROJECT = "project"
    GLOBAL = "global"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class ResolvedRule:
    """The rule that applies to one path."""

    layer: RuleLayer
    source: str  # e.g. "rules.json", ".reviewflow/rules.json@<sha>", "system:python"
    pattern: str  # the path pattern that matched
    text: str  # the review instructions given to the model (merged when merged_with is set)
    name: str | None = None  # system rule name, or None for user rules
    reference: str | None = None  # the .md/.txt/.markdown file the text came from
    merged_with: str | None = None  # name of the system rule merged in (merge_system_rule)


@dataclass(frozen=True, slots=True)
class RuleOrigin:
    """Where a setting came from: the layer and the file (or `system:<name>`)."""

    layer: RuleLayer
    source: str
