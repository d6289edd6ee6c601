"""Silencing rules learnt from dismissals: `reviewflow dismissed --suggest [--apply IDS]`.

Every dismissal reviewflow knows of the repository is evidence: the repository's
`.reviewflow/dismissed.json` (working tree), the home's `--local` list for it, and the
dismissals reviews found on a pull/merge request (a reply `reviewflow: dismiss`, a thread a
person resolved), which their JSON reports keep (`reviewflow.report.evidence`): the home's for
the repository and those `--report` names. A dismissal that does not say its finding's
category is looked up in those reports by fingerprint.

Dismissals are grouped by rule ID (when the finding had one) or category; within a group the
narrowest place that holds at least `min_count` of them becomes a proposal, deepest first: the
file itself, else its directory (`dir/**`), else a parent, up to the whole repository (`**`).
Dismissals an existing, unexpired rule of the repository's rules file covers are left out.
A proposal's ID is a hash of what it silences, so it is the same in every run. `--apply`
writes the accepted ones into `.reviewflow/rules.json` (`reviewflow.rules.edit`: the text is
edited, nothing else in it changes), with `reason`, `added_by`, `added`, `expires` (default
90 days) and the number of dismissals it was learnt from.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from reviewflow.config import OutputSettings
from reviewflow.errors import ConfigError, RulesError
from reviewflow.fsutil import write_output
from reviewflow.report.dismiss import listed
from reviewflow.report.evidence import Evidence, finding_index, on_requests, read_report
from reviewflow.report.lookup import repository_reports
from reviewflow.rules.edit import add_silence
from reviewflow.rules.loader import PROJECT_RULES
from reviewflow.rules.schema import MAX_RULES_FILE_BYTES, parse_rules_file
from reviewflow.rules.silencing import RuleUsage, SilenceRule, read_usage

MIN_COUNT = 2
EXPIRY_DAYS = 90
MAX_REASON = 300
_GLOB_SPECIAL = re.compile(r"([*?\[\]{}\\!])")


@dataclass(frozen=True, slots=True)
class Proposal:
    """A silencing rule the dismissals support."""

    id: str
    category: str | None
    rule_id: str | None
    path: str
    support: tuple[Evidence, ...]
    expires: str

    @property
    def target(self) -> str:
        what = f"{self.category} findings" if self.category else f"rule {self.rule_id}"
        return f"{what} in {self.path}"

    def reason(self) -> str:
        """The rule's `reason`: how many dismissals, and the reasons they gave."""
        given = list(dict.fromkeys(e.reason for e in self.support if e.reason))
        text = f"learnt from {len(self.support)} dismissals"
        if given:
            text += ": " + "; ".join(given)
        return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."

    def entry(self, added_by: str, today: date) -> dict[str, Any]:
        """The `silence[]` entry `--apply` writes."""
        target = {"category": self.category} if self.category else {"rule_id": self.rule_id}
        return {
            **target,
            "path": self.path,
            "reason": self.reason(),
            "added_by": added_by,
            "added": today.isoformat(),
            "expires": self.expires,
            "dismissals": len(self.support),
        }

    def record(self) -> dict[str, Any]:
        """The proposal as `--suggest --json` prints it."""
        return {
            "id": self.id,
            "category": self.category,
            "rule_id": self.rule_id,
            "path": self.path,
            "expires": self.expires,
            "reason": self.reason(),
            "dismissals": [
                {
                    "id": e.id,
                    "fingerprint": e.fingerprint,
                    "path": e.path,
                    "by": e.by,
                    "at": e.at,
                    "reason": e.reason,
                    "where": e.where,
                }
                for e in self.support
            ],
        }


@dataclass(frozen=True)
class Suggestions:
    """What `--suggest` found: proposals, the dismissals it could not learn from, and the
    repository's rules worth a look (expired, or silencing nothing)."""

    proposals: tuple[Proposal, ...]
    unclassified: tuple[Evidence, ...]
    covered: int
    expired: tuple[SilenceRule, ...]
    unused: tuple[tuple[SilenceRule, RuleUsage], ...]


def gather(
    repo_root: Path,
    home: Path,
    extra: Sequence[Path] = (),
    output: OutputSettings | None = None,
) -> list[Evidence]:
    """Every dismissal of the repository reviewflow knows, once per finding (a finding of
    several passes once per cluster): the dismissal files first, then those found on pull
    requests (the earliest report's); `extra`: JSON
    reports kept elsewhere (a CI job's), read as the home's are; `output`: the configuration's,
    where reviews write their reports besides the home."""
    missing = [str(path) for path in extra if not path.is_file()]
    if missing:
        raise ConfigError(f"--report {missing[0]}: no such file")
    paths = [*extra, *repository_reports(home, repo_root, output)]
    reports = [read_report(path) for path in paths]
    known = finding_index(reports)
    out: dict[str, Evidence] = {}
    same: dict[str, str] = {}  # a dismissed finding's cluster fingerprint -> its own
    for item in listed(repo_root, home):
        entry = item.entry
        path, category, rule_id = entry.path, entry.category, entry.rule_id
        if category is None:
            path_known, category, rule_id = known.get(entry.fingerprint, ("", None, None))
            path = path or path_known
        where = "your local list" if item.local else entry_source(item.file, repo_root)
        evidence = Evidence(
            entry.fingerprint, path, category, rule_id, entry.by, entry.at[:10], entry.reason, where
        )
        out.setdefault(entry.fingerprint, evidence)
        for member in entry.cluster_fingerprints or ():
            same.setdefault(member, entry.fingerprint)
    for found in sorted(on_requests(reports, known), key=lambda e: e.at):
        out.setdefault(same.get(found.fingerprint, found.fingerprint), found)
    return list(out.values())


def entry_source(file: Path, repo_root: Path) -> str:
    try:
        return file.relative_to(repo_root).as_posix()
    except ValueError:
        return str(file)


def suggest(
    repo_root: Path,
    home: Path,
    today: date,
    *,
    min_count: int = MIN_COUNT,
    days: int = EXPIRY_DAYS,
    reports: Sequence[Path] = (),
    output: OutputSettings | None = None,
) -> Suggestions:
    """The proposals the repository's dismissals support, and its rules to look at
    (`output`: the configuration's, where reviews write their reports)."""
    if min_count < 1:
        raise ConfigError(f"--min-count must be 1 or more, not {min_count}")
    if days < 1:
        raise ConfigError(f"--expires-in must be 1 day or more, not {days}")
    rules = existing_rules(repo_root)
    active = [rule for rule in rules if not rule.expired(today)]
    evidence = gather(repo_root, home, reports, output)
    unclassified = tuple(e for e in evidence if not e.path or not (e.category or e.rule_id))
    usable = [e for e in evidence if e.path and (e.category or e.rule_id)]
    fresh = [e for e in usable if not any(_covers(rule, e) for rule in active)]
    expires = (today + timedelta(days=days)).isoformat()
    usage = read_usage(home, str(repo_root))
    unused = tuple(
        (rule, seen)
        for rule in rules
        if (seen := usage.get(rule.identity)) is not None and seen.reviews and not seen.silenced
    )
    return Suggestions(
        proposals=tuple(_propose(fresh, min_count, expires)),
        unclassified=unclassified,
        covered=len(usable) - len(fresh),
        expired=tuple(rule for rule in rules if rule.expired(today)),
        unused=unused,
    )


def apply(
    repo_root: Path,
    proposals: Sequence[Proposal],
    chosen: str,
    added_by: str,
    today: date,
) -> list[Proposal]:
    """Write the proposals `chosen` names (`all`, or IDs separated by commas) into the
    repository's rules file; ConfigError for an ID no proposal has (nothing written)."""
    wanted = [part.strip() for part in chosen.split(",") if part.strip()]
    if wanted == ["all"]:
        accepted = list(proposals)
    else:
        by_id = {p.id.lower(): p for p in proposals}
        missing = [name for name in wanted if name.lower() not in by_id]
        if missing or not wanted:
            shown = ", ".join(missing) or "(none)"
            raise ConfigError(
                f"--apply {shown}: no such proposal now (see `reviewflow dismissed --suggest`)"
            )
        accepted = list(dict.fromkeys(by_id[name.lower()] for name in wanted))
    if not accepted:
        return []
    path = repo_root / PROJECT_RULES
    text = _read_text(path)
    try:
        edited = add_silence(text, [p.entry(added_by, today) for p in accepted], PROJECT_RULES)
    except RulesError as exc:
        raise ConfigError(str(exc)) from None
    write_output(path, edited, mode=0o644)
    return accepted


def existing_rules(repo_root: Path) -> list[SilenceRule]:
    """The silencing rules of the repository's rules file (working tree)."""
    text = _read_text(repo_root / PROJECT_RULES)
    if text is None:
        return []
    try:
        parsed = parse_rules_file(text.encode("utf-8"), PROJECT_RULES)
    except RulesError as exc:
        raise ConfigError(str(exc)) from None
    return [
        SilenceRule(layer="project", source=PROJECT_RULES, index=index, **entry.model_dump())
        for index, entry in enumerate(parsed.silence)
    ]


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_RULES_FILE_BYTES:
        raise ConfigError(f"rules file {path} is larger than {MAX_RULES_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"rules file {path} is not UTF-8 (byte {exc.start})") from None


def _covers(rule: SilenceRule, found: Evidence) -> bool:
    return rule.covers(found.category or "", found.rule_id, found.path)


def _propose(evidence: Iterable[Evidence], min_count: int, expires: str) -> list[Proposal]:
    groups: dict[tuple[str | None, str | None], list[Evidence]] = {}
    for found in evidence:
        key = (None, found.rule_id) if found.rule_id else (found.category, None)
        groups.setdefault(key, []).append(found)
    out: list[Proposal] = []
    for (category, rule_id), items in sorted(groups.items(), key=lambda kv: str(kv[0])):
        for glob, support in _places(items, min_count):
            digest = hashlib.sha256(f"{category}|{rule_id}|{glob}".encode()).hexdigest()
            ordered = tuple(sorted(support, key=lambda e: (e.at, e.path, e.fingerprint)))
            out.append(Proposal("S" + digest[:6], category, rule_id, glob, ordered, expires))
    return sorted(out, key=lambda p: (-len(p.support), p.target))


def _places(items: Sequence[Evidence], min_count: int) -> list[tuple[str, list[Evidence]]]:
    """The narrowest places holding `min_count` of `items` not yet covered, deepest first."""
    scopes: dict[tuple[int, int, str], list[Evidence]] = {}
    for found in items:
        parts = PurePosixPath(found.path).parts
        scopes.setdefault((len(parts), 0, found.path), []).append(found)
        for depth in range(len(parts) - 1, -1, -1):
            scopes.setdefault((depth, 1, "/".join(parts[:depth])), []).append(found)
    covered: set[str] = set()
    out = []
    for depth, kind, place in sorted(scopes, key=lambda s: (-s[0], s[1], s[2])):
        left = [e for e in scopes[(depth, kind, place)] if e.fingerprint not in covered]
        if len(left) < min_count:
            continue
        covered.update(e.fingerprint for e in left)
        out.append((_glob(place, directory=kind == 1), left))
    return out


def _glob(place: str, *, directory: bool) -> str:
    escaped = _GLOB_SPECIAL.sub(r"\\\1", place)
    if not directory:
        return escaped if "/" in place else "/" + escaped  # a bare name matches at any depth
    return f"{escaped}/**" if escaped else "**"
