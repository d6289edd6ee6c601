"""`reviewflow dismiss`, `dismiss --undo` and `dismissed`: record, remove and list dismissals.

The repository's `.reviewflow/dismissed.json` (in the working tree: commit it to share) or,
with `--local`, the home's `dismissed.json` (entries name the repository they apply to).
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reviewflow.config import OutputSettings
from reviewflow.errors import ConfigError
from reviewflow.git.user import git_user
from reviewflow.report.lookup import find_reported, parse_key
from reviewflow.rules.dismissals import (
    REPOSITORY_FILE,
    Dismissal,
    local_file,
    read_file,
    repository_file,
    write_file,
)

MAX_REASON = 500


@dataclass(frozen=True, slots=True)
class Listed:
    """A dismissal and the file it is in (`local`: the home's list)."""

    entry: Dismissal
    file: Path
    local: bool


def target_file(repo_root: Path, home: Path, local: bool) -> Path:
    return local_file(home) if local else repository_file(repo_root)


def clean_reason(text: str | None) -> str:
    """The reason on one line; ConfigError when it is too long."""
    reason = " ".join((text or "").split())
    if len(reason) > MAX_REASON:
        raise ConfigError(f"--reason is {len(reason)} characters: at most {MAX_REASON}")
    return reason


def dismiss(
    repo_root: Path,
    home: Path,
    key_text: str,
    *,
    reason: str | None = None,
    local: bool = False,
    report: Path | None = None,
    now: datetime | None = None,
    output: OutputSettings | None = None,
) -> Listed:
    """Record the dismissal of the finding `key_text` names (a second one replaces the
    first: its reason, who and when are the new ones); an ID is looked up in the reports
    (`output`: the configuration's, where reviews write them besides the home)."""
    key = parse_key(key_text)
    why = clean_reason(reason)
    found = find_reported(key, home, repo_root, report, output)
    entry = Dismissal(
        fingerprint=found.fingerprint,
        id=found.id,
        path=found.path,
        title=found.title,
        category=found.category,
        rule_id=found.rule_id,
        cluster_fingerprints=found.cluster or None,
        reason=why,
        by=dismisser(repo_root),
        at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        repository=str(repo_root) if local else None,
    )
    path = target_file(repo_root, home, local)
    same = (entry.repository, entry.fingerprint)
    others = [e for e in read_file(path) if (e.repository, e.fingerprint) != same]
    write_file(path, [*others, entry], shared=not local)
    return Listed(entry, path, local)


def undo(repo_root: Path, home: Path, key_text: str, *, local: bool = False) -> Listed:
    """Remove the dismissal `key_text` names (its ID or fingerprint); ConfigError when that
    file has none."""
    key = parse_key(key_text)
    path = target_file(repo_root, home, local)
    entries = read_file(path)
    mine = str(repo_root) if local else None
    gone = [e for e in entries if e.repository == mine and _names(e, key)]
    if not gone:
        where = path if local else REPOSITORY_FILE
        raise ConfigError(f"no dismissal of {key} in {where} (see `reviewflow dismissed`)")
    write_file(path, [e for e in entries if e not in gone], shared=not local)
    return Listed(gone[0], path, local)


def _names(entry: Dismissal, key: str) -> bool:
    """Whether `key` (an ID or fingerprint) is the entry's finding, or one of its cluster's."""
    return any(
        key == fingerprint or (len(key) == 13 and fingerprint.startswith(key[1:]))
        for fingerprint in entry.fingerprints
    )


def listed(repo_root: Path, home: Path) -> list[Listed]:
    """Every dismissal that applies to the repository: its file's (working tree), then the
    home's for it."""
    shared = [
        Listed(e, repository_file(repo_root), False) for e in read_file(repository_file(repo_root))
    ]
    home_path = local_file(home)
    mine = [
        Listed(e, home_path, True) for e in read_file(home_path) if e.repository == str(repo_root)
    ]
    return shared + mine


def dismisser(repo_root: Path) -> str:
    """Who is dismissing: the Git identity, else the operating system's user name, else the
    numeric user id (`uid 1000`), so an entry never records an empty `by`."""
    who = git_user(repo_root)
    if who:
        return who
    try:
        name = getpass.getuser().strip()
    except (OSError, KeyError):  # no login name in the environment nor the password database
        name = ""
    if name:
        return name
    getuid = getattr(os, "getuid", None)
    return f"uid {getuid()}" if getuid is not None else "unknown user"
