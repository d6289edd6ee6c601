"""The embedded system rules: `reviewflow/rules/system/<name>/SKILL.md`, read as package data.

A SKILL.md starts with YAML front matter between `---` lines (`name` equal to its directory,
non-empty `description`, `metadata.kind` of language|target|fallback, non-empty
`metadata.paths` globs, optional `metadata.priority`), followed by the Markdown body that
becomes the rule text. Rules are tried by (fallback last, priority, name); the first whose
paths match wins, so a `**` fallback applies only when no specific rule matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reviewflow.errors import RulesError
from reviewflow.globs.match import GlobSet

SKILL_FILE = "SKILL.md"
DEFAULT_PRIORITY = {"target": 10, "language": 50, "fallback": 1000}
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")

Kind = Literal["language", "target", "fallback"]


class _Metadata(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    kind: Kind
    paths: list[str] = Field(min_length=1)
    priority: int | None = None


class _FrontMatter(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    metadata: _Metadata


@dataclass(frozen=True, slots=True)
class SystemRule:
    """One embedded rule document."""

    name: str
    description: str
    kind: Kind
    paths: tuple[str, ...]
    priority: int
    text: str

    @property
    def source(self) -> str:
        """The report's source label, `system:<name>`."""
        return f"system:{self.name}"


@dataclass(frozen=True)
class SystemCatalog:
    """The system rules in resolution order, with all their paths compiled into one GlobSet.

    The paths describe files (`GlobSet(..., directories=False)`): `*.js` matches `app.js`, not
    `chart.js/src/main.py`.
    """

    rules: tuple[SystemRule, ...]

    @cached_property
    def _index(self) -> tuple[GlobSet, tuple[int, ...]]:
        patterns = [p for rule in self.rules for p in rule.paths]
        owners = tuple(i for i, rule in enumerate(self.rules) for _ in rule.paths)
        try:
            return GlobSet(patterns, directories=False), owners
        except ValueError as exc:  # name the rule: compile them one by one
            for rule in self.rules:
                try:
                    GlobSet(rule.paths, directories=False)
                except ValueError as rule_exc:
                    raise RulesError(f"invalid system rule {rule.name}: {rule_exc}") from None
            raise RulesError(f"invalid system rules: {exc}") from None

    def match(self, path: str) -> tuple[SystemRule, str] | None:
        """The first system rule matching `path` and the pattern that matched."""
        globs, owners = self._index
        index = globs.match_index(path)
        if index is None:
            return None
        return self.rules[owners[index]], globs.patterns[index]


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_skill(name: str, text: str) -> SystemRule:
    """Parse one SKILL.md whose directory is `name`; RulesError when it is invalid."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise RulesError(f"invalid system rule {name}: missing front matter")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise RulesError(f"invalid system rule {name}: unterminated front matter")
    try:
        raw = yaml.load("\n".join(lines[1:end]), Loader=_YAML_LOADER)
        front = _FrontMatter.model_validate(raw)
    except yaml.YAMLError as exc:
        raise RulesError(f"invalid system rule {name}: bad YAML front matter ({exc})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "front matter"
        raise RulesError(f"invalid system rule {name}: '{key}': {err['msg']}") from None
    body = "\n".join(lines[end + 1 :]).strip()
    if front.name != name or not _NAME.fullmatch(name):
        raise RulesError(f"invalid system rule {name}: name {front.name!r} must equal directory")
    if not front.description.strip() or not body:
        raise RulesError(f"invalid system rule {name}: empty description or body")
    meta = front.metadata
    priority = DEFAULT_PRIORITY[meta.kind] if meta.priority is None else meta.priority
    return SystemRule(
        name=name,
        description=front.description.strip(),
        kind=meta.kind,
        paths=tuple(meta.paths),
        priority=priority,
        text=body,
    )


def order_rules(rules: Sequence[SystemRule]) -> tuple[SystemRule, ...]:
    """Resolution order: specific rules by (priority, name), then fallbacks."""
    return tuple(sorted(rules, key=lambda r: (r.kind == "fallback", r.priority, r.name)))


def load_system_rules(root: Traversable) -> SystemCatalog:
    """Every `<root>/<name>/SKILL.md`, parsed, validated and ordered."""
    if not root.is_dir():
        return SystemCatalog(())
    rules = []
    for entry in root.iterdir():
        if entry.name.startswith((".", "_")) or not entry.is_dir():
            continue
        skill = entry / SKILL_FILE
        if skill.is_file():
            rules.append(parse_skill(entry.name, skill.read_text(encoding="utf-8")))
    return SystemCatalog(order_rules(rules))


@lru_cache(maxsize=1)
def builtin_system_rules() -> SystemCatalog:
    """The system rules shipped in the package (parsed once per process)."""
    # Beside this module, not `files("reviewflow.rules")`: naming the package whose `__init__`
    # imports this module is an import cycle (tests/test_architecture.py).
    return load_system_rules(Path(__file__).with_name("system"))
