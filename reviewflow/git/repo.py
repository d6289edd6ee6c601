"""From a repository and a ChangeSpec to a parsed Change (workspace, commit, range, stdin, or
an audit's files read as added).

Every git command goes through `reviewflow.git.runner` and its scrubbed environment (GitPython
read GIT_DIR and GIT_WORK_TREE from the process environment, and ran git with all of it).
"""

from __future__ import annotations

import hashlib
import os
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path

from reviewflow.errors import ConfigError, DiffParseError, GitError
from reviewflow.git.audit import audit_files
from reviewflow.git.encoding import decode_files, read_attributes, read_head
from reviewflow.git.headers import merge_same_path
from reviewflow.git.models import Change, ChangeSpec, DiffMode, FileDiff
from reviewflow.git.parse import parse_unified_diff
from reviewflow.git.runner import diff_flags, run_git, stream_diff, stream_tree_diff
from reviewflow.git.snapshot import resolve_commit
from reviewflow.git.untracked import untracked_files


@dataclass
class _Result:
    files: list[FileDiff]
    base_sha: str | None = None
    head_sha: str | None = None
    snapshot_ref: str | None = None
    warnings: list[str] = field(default_factory=list)


def find_repo_root(path: Path) -> Path:
    """The top of the working tree that contains `path`."""
    if not path.is_dir():
        raise GitError(f"not a Git repository: {path}")
    try:
        top = run_git(path, ["rev-parse", "--show-toplevel"])
    except GitError as err:
        if _is_bare(path):
            raise GitError(f"not a Git repository (bare, no working tree): {path}") from None
        if "not a git repository" not in str(err).lower():
            raise  # git's own reason (a repository of another user, for one)
        raise GitError(f"not a Git repository: {path}") from None
    return Path(os.fsdecode(top.removesuffix(b"\n")))


def _is_bare(path: Path) -> bool:
    try:
        return run_git(path, ["rev-parse", "--is-bare-repository"]).strip() == b"true"
    except GitError:
        return False


def _check_repository(root: Path) -> None:
    if not root.is_dir():
        raise GitError(f"not a Git repository: {root}")
    try:
        run_git(root, ["rev-parse", "--git-dir"])
    except GitError:
        raise GitError(f"not a Git repository: {root}") from None


def _try_resolve(root: Path, ref: str) -> str | None:
    """The commit SHA `ref` names, or None; a ref starting with `-` is never an option."""
    try:
        return resolve_commit(root, ref)
    except GitError:
        return None


def _diff_args(spec: ChangeSpec, *refs: str) -> list[str]:
    return ["diff", *diff_flags(spec.context_lines), "--end-of-options", *refs, "--"]


def _tree_diff(
    root: Path, spec: ChangeSpec, digest: hashlib._Hash, old: str, new: str
) -> tuple[list[FileDiff], list[str]]:
    """Diff two commits (or trees) without reading the repository's `.gitattributes`."""
    return stream_tree_diff(root, _diff_args(spec, old, new), digest)


def _workspace(root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    # Diffs against the working tree read the `.gitattributes` of the user's own checkout,
    # as git itself does. In CI (where the checkout is the change under review) the trusted
    # path is range or commit mode, whose tree-to-tree diffs ignore in-tree attributes.
    head = _try_resolve(root, "HEAD")
    if head is None:  # unborn: nothing committed yet, review what is staged
        args = ["diff", *diff_flags(spec.context_lines), "--cached", "--"]
        files, warnings = stream_diff(root, args, digest)
    else:
        files, warnings = stream_diff(root, _diff_args(spec, head), digest)
    extra, unreadable = untracked_files(root, digest)
    return _Result(merge_same_path(files + extra), head, head, None, warnings + unreadable)


def _commit(root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    sha = resolve_commit(root, spec.commit or "")
    parent = _try_resolve(root, f"{sha}^1")
    if parent is None:  # a root commit: everything it holds is added
        empty_tree = run_git(root, ["hash-object", "-t", "tree", "--stdin"]).decode().strip()
        files, warnings = _tree_diff(root, spec, digest, empty_tree, sha)
    else:
        files, warnings = _tree_diff(root, spec, digest, parent, sha)
    return _Result(files, parent, sha, sha, warnings)


def _range(root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    if spec.from_ref is None or spec.to_ref is None:
        raise ConfigError("range mode needs both --from and --to")
    start = resolve_commit(root, spec.from_ref)
    end = resolve_commit(root, spec.to_ref)
    bases = run_git(root, ["merge-base", "--end-of-options", start, end], ok=(0, 1)).split()
    if not bases:
        raise GitError(
            f"no merge base between '{spec.from_ref}' and '{spec.to_ref}' (unrelated histories)"
        )
    base = bases[0].decode("ascii")
    files, warnings = _tree_diff(root, spec, digest, base, end)
    return _Result(files, base, end, end, warnings)


def _read_source(source: str, stdin: typing.BinaryIO | None) -> bytes:
    if source == "-":
        return read_stdin(stdin if stdin is not None else sys.stdin)
    try:
        return Path(source).read_bytes()
    except OSError as err:
        raise DiffParseError(f"cannot read diff file '{source}': {err.strerror or err}") from None


def read_stdin(stream: typing.IO[typing.Any] | None) -> bytes:
    """All of a diff given on stdin (a text stream is read through its buffer); DiffParseError
    (one line) when stdin is closed or cannot be read (a directory, an I/O error)."""
    if stream is None:  # the process was started with stdin closed
        raise DiffParseError("cannot read the diff from stdin: stdin is closed")
    try:
        data: bytes = getattr(stream, "buffer", stream).read()
    except (OSError, ValueError) as err:  # ValueError: a closed file
        reason = getattr(err, "strerror", None) or str(err)
        raise DiffParseError(f"cannot read the diff from stdin: {reason}") from None
    return data


def _stdin(
    root: Path, spec: ChangeSpec, digest: hashlib._Hash, stdin: typing.BinaryIO | None
) -> _Result:
    data = _read_source(spec.diff_source or "-", stdin)
    digest.update(data)
    head = _try_resolve(root, "HEAD")
    return _Result(parse_unified_diff(data), None, head, None)


def _audit(root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    """No diff: every file audited is added; nothing is the base (`reviewflow.git.audit`)."""
    found = audit_files(root, spec, digest)
    return _Result(found.files, None, found.head, found.commit, found.warnings)


def _decoded(root: Path, result: _Result) -> tuple[list[FileDiff], list[tuple[str, str]]]:
    """The change's files with their text decoded (`reviewflow.git.encoding`): the attributes
    and first lines of the commit the change ends on, else of the working tree."""
    tree = result.snapshot_ref
    return decode_files(
        result.files,
        lambda paths: read_attributes(root, paths, tree),
        read_head(root, result.base_sha, tree),
    )


def collect_change(
    repo_root: Path, spec: ChangeSpec, stdin: typing.BinaryIO | None = None
) -> Change:
    """Acquire and parse the change `spec` names in the repository at `repo_root`."""
    digest = hashlib.sha256()
    _check_repository(repo_root)
    if spec.mode == DiffMode.WORKSPACE:
        result = _workspace(repo_root, spec, digest)
    elif spec.mode == DiffMode.COMMIT:
        result = _commit(repo_root, spec, digest)
    elif spec.mode == DiffMode.RANGE:
        result = _range(repo_root, spec, digest)
    elif spec.mode == DiffMode.STDIN:
        result = _stdin(repo_root, spec, digest, stdin)
    elif spec.mode == DiffMode.AUDIT:
        result = _audit(repo_root, spec, digest)
    else:  # pragma: no cover - the enum is closed
        raise ConfigError(f"unknown diff mode {spec.mode!r}")
    files, notes = _decoded(repo_root, result)
    return Change(
        spec=spec,
        repo_root=repo_root,
        files=tuple(files),
        encoding_notes=tuple(notes),
        base_sha=result.base_sha,
        head_sha=result.head_sha,
        snapshot_ref=result.snapshot_ref,
        diff_sha256=digest.hexdigest(),
        warnings=tuple(result.warnings),
    )
