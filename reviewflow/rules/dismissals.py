"""Dismissed findings: `.reviewflow/dismissed.json` in the repository, or the user's own list.

The repository's file is meant to be committed and reviewed like code: stable, sorted,
indented JSON, one entry per fingerprint with who dismissed it, when, why, and the finding's
title and path for the humans reading it. A finding of a review of several passes records its
cluster's other fingerprints too (`cluster_fingerprints`): the entry silences whichever of
them a later review keeps. `--local` dismissals live in the reviewflow home
(`dismissed.json`), each entry naming the repository (its root path) it applies to.

A review reads the repository's file where it reads the repository's rules: at the trusted
ref when there is one (always in CI: a change cannot dismiss its own findings), else from the
working tree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reviewflow.errors import ConfigError, RulesError
from reviewflow.fsutil import write_output
from reviewflow.git.snapshot import resolve_commit
from reviewflow.rules.silencing import SilenceRule
from reviewflow.rules.sources import CommitBase, DirectoryBase, FileBase

REPOSITORY_FILE = ".reviewflow/dismissed.json"
LOCAL_FILE = "dismissed.json"  # in the reviewflow home
FILE_VERSION = 1
MAX_FILE_BYTES = 4 << 20
FINGERPRINT_PATTERN = r"^[0-9a-f]{64}$"


class Dismissal(BaseModel):
    """One dismissed finding (`repository` only in the home's list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: str = Field(pattern=FINGERPRINT_PATTERN)
    id: str = ""
    path: str = ""
    title: str = ""
    category: str | None = None  # recorded since silencing rules are learnt from dismissals
    rule_id: str | None = None
    # the other fingerprints of its cluster (a review of several passes); None: none, and no
    # key in the file (a file without clusters reads as before)
    cluster_fingerprints: tuple[Annotated[str, Field(pattern=FINGERPRINT_PATTERN)], ...] | None = (
        None
    )
    reason: str = ""
    by: str = ""
    at: str = ""
    repository: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.repository or "", self.path, self.fingerprint)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """Its fingerprint, then its cluster's."""
        return (self.fingerprint, *(self.cluster_fingerprints or ()))


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: int = FILE_VERSION
    dismissed: list[dict[str, Any]] = Field(default_factory=list)


class Dismissed(BaseModel):
    """What the team said not to report again: the dismissals a review applies, by
    fingerprint, and where each was read; the rule layers' silencing rules (`rules`), and
    the repository and home whose usage record counts them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # fingerprint -> its dismissal: each entry's own, then its cluster's (`cluster_fingerprints`)
    entries: dict[str, Dismissal] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict)  # fingerprint -> file, in words
    rules: tuple[SilenceRule, ...] = ()
    repository: str = ""
    home: str = ""

    def reasons(self) -> dict[str, str]:
        """Every dismissed fingerprint and its `detail`."""
        return {fingerprint: self.detail(fingerprint) for fingerprint in self.entries}

    def detail(self, fingerprint: str) -> str:
        """`dropped[].detail` of a dismissed finding: where, by whom, when, why."""
        entry = self.entries[fingerprint]
        who = f" by {entry.by}" if entry.by else ""
        when = f" on {entry.at[:10]}" if entry.at else ""
        why = f": {entry.reason}" if entry.reason else ""
        return f"dismissed in {self.sources[fingerprint]}{who}{when}{why}"

    def match(self, fingerprints: Sequence[str]) -> Dismissal | None:
        """The dismissal of a finding known by `fingerprints` (its own, then its cluster's:
        `Finding.fingerprints`), None when none is dismissed."""
        return next((self.entries[f] for f in fingerprints if f in self.entries), None)


def parse_dismissals(data: bytes, source: str) -> list[Dismissal]:
    """The entries of a dismissals file; ConfigError (one line naming it) when malformed."""
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"invalid dismissals file {source}: not JSON ({exc})") from None
    try:
        parsed = _File.model_validate(raw)
    except ValidationError as exc:
        raise _invalid(source, exc, "") from None
    entries = []
    for index, item in enumerate(parsed.dismissed):
        try:
            entries.append(Dismissal.model_validate(item))
        except ValidationError as exc:
            raise _invalid(source, exc, f"dismissed[{index}].") from None
    if parsed.version != FILE_VERSION:
        raise ConfigError(
            f"invalid dismissals file {source}: version {parsed.version} (this reviewflow "
            f"reads version {FILE_VERSION})"
        )
    return entries


def _invalid(source: str, exc: ValidationError, prefix: str) -> ConfigError:
    err = exc.errors()[0]
    key = prefix + ".".join(str(part) for part in err["loc"]) or "top level"
    problem = err["msg"]
    if key.endswith(".fingerprint") and err["type"] == "string_pattern_mismatch":
        problem = "must be a finding's fingerprint (64 hex digits)"
    return ConfigError(f"invalid dismissals file {source}: '{key}': {problem}")


def render_dismissals(entries: Iterable[Dismissal]) -> str:
    """The file's text: sorted by path then fingerprint, fixed key order, indented."""
    ordered = sorted({e.key: e for e in entries}.values(), key=lambda e: e.key)
    items = [e.model_dump(exclude_none=True) for e in ordered]
    text = json.dumps({"version": FILE_VERSION, "dismissed": items}, indent=2, ensure_ascii=False)
    return text + "\n"


def repository_file(repo_root: Path) -> Path:
    return repo_root / REPOSITORY_FILE


def local_file(home: Path) -> Path:
    return home / LOCAL_FILE


def read_file(path: Path) -> list[Dismissal]:
    """The entries of the dismissals file at `path` ([] when there is none)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read dismissals file {path}: {exc.strerror or exc}") from None
    return parse_dismissals(data, str(path))


def write_file(path: Path, entries: Iterable[Dismissal], *, shared: bool) -> None:
    """Write the file through the one write helper (atomically). A new repository file is
    0644, as it is committed and shared; the home's list is the user's alone (0600)."""
    write_output(path, render_dismissals(entries), mode=0o644 if shared else 0o600)


def load_dismissed(
    repo_root: Path, trusted_ref: str | None, home: Path, rules: Sequence[SilenceRule] = ()
) -> Dismissed:
    """The dismissals a review of `repo_root` applies: the repository's file (at `trusted_ref`
    when set, else the working tree) and the home's entries for this repository; with the
    silencing rules of its rule layers (`rules`, read where its rules were)."""
    base: FileBase
    if trusted_ref is None:
        base, source = DirectoryBase(repo_root), REPOSITORY_FILE
    else:
        commit = resolve_commit(repo_root, trusted_ref)
        base, source = CommitBase(repo_root, commit), f"{REPOSITORY_FILE}@{commit[:12]}"
    try:
        data = base.read(REPOSITORY_FILE, (".json",), MAX_FILE_BYTES)
    except RulesError as exc:
        raise ConfigError(f"cannot read dismissals file {source}: {exc}") from None
    shared = parse_dismissals(data, source) if data is not None else []
    home_path = local_file(home)
    mine = [e for e in read_file(home_path) if e.repository == str(repo_root)]
    entries: dict[str, Dismissal] = {}
    sources: dict[str, str] = {}
    found = [*((e, source) for e in shared), *((e, str(home_path)) for e in mine)]
    for entry, where in found:  # an entry's own fingerprint before any cluster's
        entries.setdefault(entry.fingerprint, entry)
        sources.setdefault(entry.fingerprint, where)
    for entry, where in found:
        for fingerprint in entry.cluster_fingerprints or ():
            entries.setdefault(fingerprint, entry)
            sources.setdefault(fingerprint, where)
    return Dismissed(
        entries=entries,
        sources=sources,
        rules=tuple(rules),
        repository=str(repo_root),
        home=str(home),
    )
