"""The rules.json format (000 §5), parsed strictly: syntax errors name file, line and column.

Besides `include`, `exclude` and `rules`, a file may hold `silence`: the team's silencing rules
(a category or a rule ID in a path glob, with why, who and until when), which a review applies
after finalize as it applies dismissals (`reviewflow.rules.silencing`).
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reviewflow.errors import RulesError
from reviewflow.globs.match import GlobSet
from reviewflow.models import Category

REFERENCE_SUFFIXES = (".md", ".txt", ".markdown")
MAX_RULES_FILE_BYTES = 1024 * 1024


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RuleEntry(_Strict):
    """One `rules[]` item: a path glob and its rule (inline text or a reference)."""

    path: str = Field(min_length=1)
    rule: str = Field(min_length=1)
    merge_system_rule: bool = False

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        GlobSet([value])
        return value

    @field_validator("rule")
    @classmethod
    def _check_rule(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the rule text is empty")
        return value

    @property
    def reference(self) -> str | None:
        """The referenced file when `rule` names a .md/.txt/.markdown file, else None."""
        return rule_reference(self.rule)


class SilenceEntry(_Strict):
    """One `silence[]` item: findings of `category` (or of rule `rule_id`) in files `path`
    matches are dropped, until `expires` (a date, `YYYY-MM-DD`: from that day it silences
    nothing). `reason` says why; `added_by`, `added` and `dismissals` say who wrote it, when,
    and how many dismissals it was learnt from (`reviewflow dismissed --suggest --apply`)."""

    path: str = Field(min_length=1)
    category: str | None = None
    rule_id: str | None = Field(default=None, min_length=1)
    reason: str = Field(min_length=1, max_length=1000)
    added_by: str = ""
    added: str | None = None
    expires: str | None = None
    dismissals: int | None = Field(default=None, ge=0)

    @field_validator("path")
    @classmethod
    def _check_path(cls, value: str) -> str:
        GlobSet([value])
        return value

    @field_validator("category")
    @classmethod
    def _check_category(cls, value: str | None) -> str | None:
        if value is not None and value not in {c.value for c in Category}:
            names = ", ".join(c.value for c in Category)
            raise ValueError(f"'{value}' is not a category (one of {names})")
        return value

    @field_validator("added", "expires")
    @classmethod
    def _check_date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"'{value}' is not a date (YYYY-MM-DD)") from None
            if len(value) != 10:
                raise ValueError(f"'{value}' is not a date (YYYY-MM-DD)")
        return value

    @model_validator(mode="after")
    def _one_target(self) -> SilenceEntry:
        if (self.category is None) == (self.rule_id is None):
            raise ValueError("give exactly one of 'category' and 'rule_id'")
        return self


class RulesFile(_Strict):
    """A whole rules.json; `include`/`exclude` count as declared only when the key is present."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    rules: list[RuleEntry] = Field(default_factory=list)
    silence: list[SilenceEntry] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _check_globs(cls, value: list[str]) -> list[str]:
        GlobSet(value)
        return value

    @property
    def declares_include(self) -> bool:
        """Whether the file has an `include` key."""
        return "include" in self.model_fields_set

    @property
    def declares_exclude(self) -> bool:
        """Whether the file has an `exclude` key."""
        return "exclude" in self.model_fields_set


def rule_reference(text: str) -> str | None:
    """`text` as a reference when it is one line ending in .md/.txt/.markdown, else None."""
    candidate = text.strip()
    if "\n" in candidate or "\r" in candidate or len(candidate) > 4096:
        return None
    return candidate if candidate.lower().endswith(REFERENCE_SUFFIXES) else None


def parse_rules_file(data: bytes, source: str) -> RulesFile:
    """Parse and validate rules.json bytes; RulesError names `source` and the line or key."""
    if len(data) > MAX_RULES_FILE_BYTES:
        raise RulesError(f"rules file {source} is larger than {MAX_RULES_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RulesError(f"rules file {source} is not UTF-8 (byte {exc.start})") from None
    try:
        raw = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise RulesError(
            f"invalid JSON in {source} line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except _DuplicateKeyError as exc:
        raise RulesError(f"invalid rules file {source}: duplicate key '{exc.key}'") from None
    if not isinstance(raw, dict):
        raise RulesError(f"invalid rules file {source}: the top level must be a JSON object")
    try:
        return RulesFile.model_validate(raw)
    except ValidationError as exc:
        raise RulesError(_describe(exc, source)) from None


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _describe(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    key = ""
    for part in err["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    if err["type"] == "extra_forbidden":
        return f"invalid rules file {source}: unknown key '{key}'"
    if err["type"] == "missing":
        return f"invalid rules file {source}: missing key '{key}'"
    message = err["msg"].removeprefix("Value error, ")
    return f"invalid rules file {source}: '{key}': {message}"
