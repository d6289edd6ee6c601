"""The team's silencing rules (`silence[]` of a rules file) as a review applies them, and what
this machine remembers of their use.

A rule silences the findings of its category (or its rule ID) in the files its `path` glob
matches (a file glob, as a rule's `path`), until its `expires` date: from that day on it
silences nothing and the review names it. The rules come from the loaded rule layers, so in CI
the repository's are read at the trusted ref, as its other rules are.

Whether a rule ever silenced anything is remembered in the home, per repository
(`<home>/silence-usage.json`): how many reviews ran with it, how many findings it silenced,
first and last seen. When it expires, a rule that silenced nothing in every review this home
ran with it is named as unused. The file is written atomically (a review running at the same
time may miss one count: it is a hint for the team, never a gate).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from reviewflow.errors import OutputError
from reviewflow.fsutil import write_output
from reviewflow.globs.match import GlobSet
from reviewflow.models import ReviewWarning
from reviewflow.rules.loader import RuleSet

USAGE_FILE = "silence-usage.json"  # in the reviewflow home
USAGE_VERSION = 1


class SilenceRule(BaseModel):
    """One loaded `silence[]` entry and the file it is in (`source`, `index`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layer: str
    source: str
    index: int
    path: str
    category: str | None = None
    rule_id: str | None = None
    reason: str
    added_by: str = ""
    added: str | None = None
    expires: str | None = None
    dismissals: int | None = None

    @property
    def name(self) -> str:
        """`.reviewflow/rules.json silence[2]` (the source without its commit)."""
        return f"{self.source.split('@', 1)[0]} silence[{self.index}]"

    @property
    def target(self) -> str:
        """What it silences, in words: `security findings in tests/**`."""
        what = f"{self.category} findings" if self.category else f"rule {self.rule_id}"
        return f"{what} in {self.path}"

    @property
    def identity(self) -> str:
        """The rule's identity across commits, moves in its file and renewals of its
        `expires` (for its usage: its whole life)."""
        key = [self.layer, self.category, self.rule_id, self.path, self.added]
        return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:24]

    def expired(self, today: date) -> bool:
        return self.expires is not None and date.fromisoformat(self.expires) <= today

    def covers(self, category: str, rule_id: str | None, path: str) -> bool:
        """Whether a finding of `category`/`rule_id` in `path` is this rule's (expiry aside)."""
        if self.category is not None and self.category != category:
            return False
        if self.rule_id is not None and self.rule_id != rule_id:
            return False
        return GlobSet([self.path], directories=False).match_index(path) is not None

    def detail(self) -> str:
        """`dropped[].detail` of a finding it silenced."""
        who = f" by {self.added_by}" if self.added_by else ""
        until = f", until {self.expires}" if self.expires else ""
        return f"silenced by {self.name} ({self.target}{who}{until}): {self.reason}"


class RuleUsage(BaseModel):
    """What this home saw of one rule: reviews run with it active, findings it silenced."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reviews: int = 0
    silenced: int = 0
    first: str = ""
    last: str = ""

    def counted(self, silenced: int, today: date) -> RuleUsage:
        day = today.isoformat()
        return RuleUsage(
            reviews=self.reviews + 1,
            silenced=self.silenced + silenced,
            first=self.first or day,
            last=day,
        )


def silence_rules(rules: RuleSet) -> tuple[SilenceRule, ...]:
    """Every layer's `silence[]` entries, highest layer first (the first that covers wins)."""
    return tuple(
        SilenceRule(layer=layer.layer.value, source=layer.source, index=index, **entry.model_dump())
        for layer in rules.layers
        for index, entry in enumerate(layer.silence)
    )


def usage_file(home: Path) -> Path:
    return home / USAGE_FILE


def read_usage(home: Path, repository: str) -> dict[str, RuleUsage]:
    """This repository's rules' usage (by identity); {} when none or unreadable (a hint)."""
    try:
        raw = json.loads(usage_file(home).read_text(encoding="utf-8"))
        mine = raw["repositories"].get(repository, {})
        return {key: RuleUsage.model_validate(value) for key, value in mine.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return {}


def write_usage(
    home: Path, repository: str, usage: Mapping[str, RuleUsage]
) -> ReviewWarning | None:
    """Replace this repository's usage in the home's file (others' kept); a file that cannot
    be written is a `silence_usage_unwritten` warning, never a failed review."""
    path = usage_file(home)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        repositories = dict(raw["repositories"])
    except (OSError, ValueError, KeyError, TypeError):
        repositories = {}
    repositories[repository] = {key: value.model_dump() for key, value in sorted(usage.items())}
    text = json.dumps({"version": USAGE_VERSION, "repositories": repositories}, indent=2)
    try:
        write_output(path, text + "\n", mode=0o600)
    except OutputError as exc:
        problem = str(exc)
        return ReviewWarning("silence_usage_unwritten", f"{problem}: silencing rules' use not kept")
    return None


def counted_usage(
    rules: Iterable[SilenceRule],
    usage: Mapping[str, RuleUsage],
    silenced: Mapping[str, int],
    today: date,
) -> dict[str, RuleUsage]:
    """`usage` after one review: each rule active in it counted (`silenced`: by rule name)."""
    out = dict(usage)
    for rule in rules:
        if not rule.expired(today):
            before = out.get(rule.identity, RuleUsage())
            out[rule.identity] = before.counted(silenced.get(rule.name, 0), today)
    return out
