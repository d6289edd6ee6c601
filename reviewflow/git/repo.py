"""From a repository and a ChangeSpec to a parsed Change (workspace, commit, range, stdin)."""

from __future__ import annotations

import hashlib
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path

import git

from reviewflow.errors import ConfigError, DiffParseError, GitError
from reviewflow.git.headers import merge_same_path
from reviewflow.git.models import Change, ChangeSpec, DiffMode, FileDiff
from reviewflow.git.parse import parse_unified_diff
from reviewflow.git.runner import diff_flags, run_git, stream_diff, stream_tree_diff
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
    try:
        with git.Repo(path, search_parent_directories=True) as repo:
            top = repo.working_tree_dir
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(f"not a Git repository: {path}") from None
    if top is None:
        raise GitError(f"not a Git repository (bare, no working tree): {path}")
    return Path(top)


def _open(repo_root: Path) -> git.Repo:
    try:
        return git.Repo(repo_root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(f"not a Git repository: {repo_root}") from None


def _try_resolve(repo: git.Repo, ref: str) -> str | None:
    """The commit SHA `ref` names, or None; a ref starting with `-` is never an option."""
    try:
        out = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except git.GitCommandError:
        return None
    return str(out).strip() or None


def resolve_commit(repo: git.Repo, ref: str) -> str:
    """The commit SHA `ref` names; GitError "unknown revision" otherwise."""
    sha = _try_resolve(repo, ref) if ref else None
    if sha is None:
        raise GitError(f"unknown revision '{ref}'")
    return sha


def _diff_args(spec: ChangeSpec, *refs: str) -> list[str]:
    return ["diff", *diff_flags(spec.context_lines), "--end-of-options", *refs, "--"]


def _tree_diff(
    root: Path, spec: ChangeSpec, digest: hashlib._Hash, old: str, new: str
) -> tuple[list[FileDiff], list[str]]:
    """Diff two commits (or trees) without reading the repository's `.gitattributes`."""
    return stream_tree_diff(root, _diff_args(spec, old, new), digest)


def _workspace(repo: git.Repo, root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    # Diffs against the working tree read the `.gitattributes` of the user's own checkout,
    # as git itself does. In CI (where the checkout is the change under review) the trusted
    # path is range or commit mode, whose tree-to-tree diffs ignore in-tree attributes.
    head = _try_resolve(repo, "HEAD")
    if head is None:  # unborn: nothing committed yet, review what is staged
        args = ["diff", *diff_flags(spec.context_lines), "--cached", "--"]
        files, warnings = stream_diff(root, args, digest)
    else:
        files, warnings = stream_diff(root, _diff_args(spec, head), digest)
    extra, unreadable = untracked_files(root, digest)
    return _Result(merge_same_path(files + extra), head, head, None, warnings + unreadable)


def _commit(repo: git.Repo, root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    sha = resolve_commit(repo, spec.commit or "")
    parent = _try_resolve(repo, f"{sha}^1")
    if parent is None:  # a root commit: everything it holds is added
        empty_tree = run_git(root, ["hash-object", "-t", "tree", "--stdin"]).decode().strip()
        files, warnings = _tree_diff(root, spec, digest, empty_tree, sha)
    else:
        files, warnings = _tree_diff(root, spec, digest, parent, sha)
    return _Result(files, parent, sha, sha, warnings)


def _range(repo: git.Repo, root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> _Result:
    if spec.from_ref is None or spec.to_ref is None:
        raise ConfigError("range mode needs both --from and --to")
    start = resolve_commit(repo, spec.from_ref)
    end = resolve_commit(repo, spec.to_ref)
    try:
        bases = repo.merge_base(start, end)
    except git.GitCommandError as err:
        raise GitError(f"git merge-base failed: {str(err.stderr).strip()}") from None
    base = next((str(b.hexsha) for b in bases if b is not None), None)
    if base is None:
        raise GitError(
            f"no merge base between '{spec.from_ref}' and '{spec.to_ref}' (unrelated histories)"
        )
    files, warnings = _tree_diff(root, spec, digest, base, end)
    return _Result(files, base, end, end, warnings)


def _read_source(source: str, stdin: typing.BinaryIO | None) -> bytes:
    if source == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return stream.read()
    try:
        return Path(source).read_bytes()
    except OSError as err:
        raise DiffParseError(f"cannot read diff file '{source}': {err.strerror or err}") from None


def _stdin(
    repo: git.Repo, spec: ChangeSpec, digest: hashlib._Hash, stdin: typing.BinaryIO | None
) -> _Result:
    data = _read_source(spec.diff_source or "-", stdin)
    digest.update(data)
    head = _try_resolve(repo, "HEAD")
    return _Result(parse_unified_diff(data), None, head, None)


def collect_change(
    repo_root: Path, spec: ChangeSpec, stdin: typing.BinaryIO | None = None
) -> Change:
    """Acquire and parse the change `spec` names in the repository at `repo_root`."""
    digest = hashlib.sha256()
    with _open(repo_root) as repo:
        if spec.mode == DiffMode.WORKSPACE:
            result = _workspace(repo, repo_root, spec, digest)
        elif spec.mode == DiffMode.COMMIT:
            result = _commit(repo, repo_root, spec, digest)
        elif spec.mode == DiffMode.RANGE:
            result = _range(repo, repo_root, spec, digest)
        elif spec.mode == DiffMode.STDIN:
            result = _stdin(repo, spec, digest, stdin)
        else:  # pragma: no cover - the enum is closed
            raise ConfigError(f"unknown diff mode {spec.mode!r}")
    return Change(
        spec=spec,
        repo_root=repo_root,
        files=tuple(result.files),
        base_sha=result.base_sha,
        head_sha=result.head_sha,
        snapshot_ref=result.snapshot_ref,
        diff_sha256=digest.hexdigest(),
        warnings=tuple(result.warnings),
    )
