"""The team's review instructions (`--instructions FILE`, `review.instructions`): trusted guidance
in Markdown that every file's review gets in its system prompt.

Where the file is read from follows the rules' trust model (`reviewflow.rules.trust`):
- a file outside the repository is the operator's own: read as it is, also in CI;
- a file inside the repository is read with `git` at the trusted ref the repository's rules use
  whenever there is one (always in CI), never from the working tree or the change; without a
  trusted ref (outside CI) from the working tree, as it is.
In CI a version at the trusted ref that is the change's own (the change adds or modifies the
file and the trusted ref already holds its new content, as `--trusted-ref HEAD` can) is refused.
A relative path is taken from the repository root (the CLI makes `--instructions` absolute).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from reviewflow.errors import RulesError, TrustError
from reviewflow.git.models import Change, FileStatus
from reviewflow.git.snapshot import read_blob, resolve_commit
from reviewflow.models import ReviewWarning
from reviewflow.rules.schema import REFERENCE_SUFFIXES
from reviewflow.rules.sources import CommitBase

MAX_INSTRUCTIONS_BYTES = 16 * 1024
"""Sent with every model request of every file: 16 KiB is about 4,000 tokens."""
_READ_CAP = 16 * 1024 * 1024  # a blob larger than this is not even read to be measured
SETTING = "--instructions / review.instructions"


class InstructionsSource(StrEnum):
    WORKING_TREE = "working_tree"
    TRUSTED_REF = "trusted_ref"
    OPERATOR_FILE = "operator_file"


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instructions a review applies, and where they were read from."""

    path: str  # inside the repository: relative to its root; outside: absolute
    text: str  # as the model gets it (decoded, surrounding blank lines trimmed)
    size: int  # bytes of the file
    sha256: str  # of the file's bytes
    source: InstructionsSource
    ref: str | None = None  # the trusted ref, as given (TRUSTED_REF only)
    commit: str | None = None  # the commit it named

    @property
    def origin(self) -> str:
        """Where it was read from, in words: `the working tree`, `trusted ref X (sha)`, ..."""
        if self.source is InstructionsSource.TRUSTED_REF:
            commit = f" ({self.commit[:12]})" if self.commit and self.commit != self.ref else ""
            return f"trusted ref {self.ref}{commit}"
        if self.source is InstructionsSource.WORKING_TREE:
            return "the working tree"
        return "an operator file (outside the repository)"

    def record(self) -> dict[str, Any]:
        """A JSON-able description (never the text) for the preview and `rules check`."""
        return {
            "path": self.path,
            "bytes": self.size,
            "sha256": self.sha256,
            "source": self.source.value,
            "ref": self.ref,
            "commit": self.commit,
            "read_from": self.origin,
        }


def load_instructions(
    setting: str | None,
    repo_root: Path,
    trusted_ref: str | None,
    ci_variables: Sequence[str],
    change: Change | None = None,
    deployed: bool = False,
) -> tuple[Instructions | None, list[ReviewWarning]]:
    """The instructions `setting` names (None when unset) for reviewing `change`, read as the
    module says; an empty file is a warning and no instructions. Errors (missing, unreadable,
    too large, refused in CI) raise RulesError or TrustError with one line naming the file and
    the setting the user can change (`deployed`: a deployment's `trusted_ref` parameter, else
    the CLI's `--trusted-ref`)."""
    if setting is None or not setting.strip():
        return None, []
    absolute, inside = locate(setting, repo_root)
    if inside is None:
        data = _read_file(absolute, str(absolute))
        found = _build(str(absolute), data, InstructionsSource.OPERATOR_FILE)
    elif trusted_ref is None:
        if ci_variables:  # the trust model gives CI a trusted ref; never fall back to the tree
            raise TrustError(
                f"running in CI without a trusted ref: instructions file {inside} ({SETTING}) "
                f"is inside the repository ({_trust_hint(deployed)})"
            )
        found = _build(inside, _read_file(absolute, inside), InstructionsSource.WORKING_TREE)
    else:
        in_ci = change if ci_variables else None
        found = _at_trusted_ref(inside, repo_root, trusted_ref, in_ci, deployed)
    if not found.text:
        note = f"instructions file {found.path} is empty: no instructions are given to the model"
        return None, [ReviewWarning("instructions_empty", note)]
    return found, []


def locate(setting: str, repo_root: Path) -> tuple[Path, str | None]:
    """The file's absolute path, and its POSIX path inside the repository (None: outside).

    Inside means inside as written (`..` folded) or once symlinks are resolved: a path that
    reaches the checkout through a link is still the repository's file.
    """
    path = Path(setting.strip()).expanduser()
    absolute = Path(os.path.normpath(path if path.is_absolute() else repo_root / path))
    roots = dict.fromkeys((repo_root, repo_root.resolve()))
    for candidate in (absolute, absolute.resolve()):
        for root in roots:
            if candidate != root and candidate.is_relative_to(root):
                return absolute, candidate.relative_to(root).as_posix()
    return absolute, None


def _build(path: str, data: bytes, source: InstructionsSource, **where: str) -> Instructions:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RulesError(f"instructions file {path} ({SETTING}) is not UTF-8 text") from None
    digest = hashlib.sha256(data).hexdigest()
    return Instructions(path, text.strip(), len(data), digest, source, **where)


def _suffix(path: str) -> None:
    if not path.lower().endswith(REFERENCE_SUFFIXES):
        kinds = ", ".join(REFERENCE_SUFFIXES)
        raise RulesError(f"instructions file {path} ({SETTING}) must be a {kinds} file")


def _too_large(path: str, size: int) -> RulesError:
    limit = MAX_INSTRUCTIONS_BYTES
    return RulesError(
        f"instructions file {path} ({SETTING}) is {size} bytes, over the limit of {limit} "
        f"bytes ({limit // 1024} KiB): shorten it"
    )


def _read_file(absolute: Path, shown: str) -> bytes:
    """A file as it is (the user's or the operator's own: symlinks are followed)."""
    _suffix(shown)
    problem = f"cannot read instructions file {shown} ({SETTING})"
    try:
        info = absolute.stat()
        if not stat.S_ISREG(info.st_mode):
            raise RulesError(f"{problem}: not a regular file")
        if info.st_size > MAX_INSTRUCTIONS_BYTES:
            raise _too_large(shown, info.st_size)
        with absolute.open("rb") as handle:
            data = handle.read(MAX_INSTRUCTIONS_BYTES + 1)
    except FileNotFoundError:
        raise RulesError(f"{problem}: no such file") from None
    except OSError as exc:
        raise RulesError(f"{problem}: {exc.strerror or exc}") from None
    if len(data) > MAX_INSTRUCTIONS_BYTES:  # it grew since stat
        raise _too_large(shown, len(data))
    return data


def _trust_hint(deployed: bool) -> str:
    """How the user names a trusted ref where the review came from."""
    if deployed:
        return "set the deployment's trusted_ref parameter to the base ref"
    return "pass --trusted-ref <base ref>"


def _at_trusted_ref(
    rel: str, root: Path, ref: str, change: Change | None, deployed: bool
) -> Instructions:
    """The repository's file at the trusted ref; never `change`'s own version (in CI)."""
    _suffix(rel)
    commit = resolve_commit(root, ref)
    where = f"trusted ref {ref}" + (f" ({commit[:12]})" if commit != ref else "")
    try:
        data = CommitBase(root, commit).read(rel, REFERENCE_SUFFIXES, _READ_CAP)
    except RulesError as exc:
        raise RulesError(f"cannot read instructions file {rel} at {where}: {exc}") from None
    if data is None:
        raise RulesError(
            f"instructions file {rel} ({SETTING}) is not in {where}: a file inside the "
            "repository is read there, never from the change (commit it to the base first, "
            "or give a file outside the repository)"
        )
    if len(data) > MAX_INSTRUCTIONS_BYTES:
        raise _too_large(f"{rel} at {where}", len(data))
    if change is not None and _is_change_version(change, rel, data):
        raise TrustError(
            f"instructions file {rel} at {where} is this change's own version: in CI a change "
            "cannot supply its own review instructions (review a range, --from <target branch> "
            f"--to HEAD, or {_trust_hint(deployed)})"
        )
    return _build(rel, data, InstructionsSource.TRUSTED_REF, ref=ref, commit=commit)


def _is_change_version(change: Change, rel: str, data: bytes) -> bool:
    """Whether the change adds or modifies `rel` and `data` is its new content."""
    touched = any(f.path == rel and f.status is not FileStatus.DELETED for f in change.files)
    return touched and _new_side(change, rel) == data


def _new_side(change: Change, rel: str) -> bytes | None:
    """The change's version of `rel`: at its head commit, or in the working tree."""
    if change.snapshot_ref is not None:
        return read_blob(change.repo_root, change.snapshot_ref, rel)
    try:
        return (change.repo_root / rel).read_bytes()
    except OSError:
        return None
