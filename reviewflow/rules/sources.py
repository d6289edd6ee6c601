"""Confined file reading for rules: from a directory, or from a commit with `git`.

Both readers take a relative POSIX path and refuse absolute paths, `..` components, files whose
name (or symlink target) lacks an allowed suffix, symlinks resolving outside their base,
non-regular files and files over a size limit. Such refusals raise RulesError; a path that
does not exist gives None. Git failures raise GitError.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Protocol

from reviewflow.errors import RulesError
from reviewflow.git.runner import run_git
from reviewflow.git.snapshot import read_blob

MAX_SYMLINK_HOPS = 8


class FileBase(Protocol):
    """Somewhere rule files are read from (a directory or a commit)."""

    def describe(self, relpath: str) -> str:
        """A human label for `relpath` under this base."""
        ...

    def read(self, relpath: str, suffixes: tuple[str, ...], limit: int) -> bytes | None:
        """The bytes of `relpath`, None when missing; RulesError when refused."""
        ...


def clean_relative(relpath: str) -> str:
    """`relpath` normalized to a relative POSIX path; RulesError for absolute or `..` paths."""
    text = relpath.strip()
    if not text:
        raise RulesError("empty path")
    if text.startswith(("/", "\\")) or PureWindowsPath(text).drive:
        raise RulesError("absolute paths are not allowed")
    parts = [part for part in PurePosixPath(text).parts if part != "."]
    if ".." in parts:
        raise RulesError("'..' is not allowed in a path")
    if not parts:
        raise RulesError("empty path")
    return "/".join(parts)


def _check_suffix(name: str, suffixes: tuple[str, ...], what: str) -> None:
    if not name.lower().endswith(suffixes):
        raise RulesError(f"{what} must end with {', '.join(suffixes)}")


class DirectoryBase:
    """Files under a directory; symlinks may not resolve outside it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self, relpath: str) -> str:
        """`relpath` joined to the directory."""
        return str(self.root / relpath)

    def read(self, relpath: str, suffixes: tuple[str, ...], limit: int) -> bytes | None:
        """The bytes of `relpath` under the directory (see the module docstring)."""
        rel = clean_relative(relpath)
        _check_suffix(rel, suffixes, "the file name")
        candidate = self.root / rel
        if not os.path.lexists(candidate):
            return None
        try:
            real = candidate.resolve(strict=True)
            base = self.root.resolve(strict=True)
        except (OSError, RuntimeError):
            raise RulesError("broken symlink or symlink loop") from None
        if not real.is_relative_to(base):
            raise RulesError("resolves outside its base directory")
        _check_suffix(real.name, suffixes, "the symlink target")
        try:
            info = real.stat()
            if not stat.S_ISREG(info.st_mode):
                raise RulesError("not a regular file")
            if info.st_size > limit:
                raise RulesError(f"larger than {limit} bytes")
            with real.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise RulesError(f"cannot read: {exc.strerror or exc}") from None
        if len(data) > limit:
            raise RulesError(f"larger than {limit} bytes")
        return data


class CommitBase:
    """Files of one commit (read with git); a symlink is followed only within the tree."""

    def __init__(self, repo_root: Path, sha: str) -> None:
        self.repo_root = repo_root
        self.sha = sha

    def describe(self, relpath: str) -> str:
        """`relpath` at the commit."""
        return f"{relpath}@{self.sha}"

    def read(self, relpath: str, suffixes: tuple[str, ...], limit: int) -> bytes | None:
        """The bytes of `relpath` at the commit (see the module docstring)."""
        rel = clean_relative(relpath)
        _check_suffix(rel, suffixes, "the file name")
        for _ in range(MAX_SYMLINK_HOPS):
            entry = _tree_entry(self.repo_root, self.sha, rel)
            if entry is None:
                return None
            mode, kind, size = entry
            if mode == "120000":
                rel = self._follow(rel, suffixes)
                continue
            if kind != "blob":
                raise RulesError("not a regular file")
            if size > limit:
                raise RulesError(f"larger than {limit} bytes")
            return read_blob(self.repo_root, self.sha, rel)
        raise RulesError("too many levels of symlinks")

    def _follow(self, rel: str, suffixes: tuple[str, ...]) -> str:
        raw = read_blob(self.repo_root, self.sha, rel) or b""
        target = raw.decode("utf-8", "surrogateescape")
        if target.startswith("/") or PureWindowsPath(target).drive:
            raise RulesError("symlink resolves outside the repository")
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
        if joined == ".." or joined.startswith("../"):
            raise RulesError("symlink resolves outside the repository")
        _check_suffix(joined, suffixes, "the symlink target")
        return joined


def _tree_entry(repo_root: Path, sha: str, rel: str) -> tuple[str, str, int] | None:
    """(mode, type, size) of `rel` in the commit's tree, or None when absent."""
    out = run_git(
        repo_root,
        ["ls-tree", "-l", "-z", "--full-tree", sha, "--", rel],
        options=["--literal-pathspecs"],
    )
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if name.decode("utf-8", "surrogateescape") != rel:
            continue
        mode, kind, _obj, size = meta.decode().split()
        return mode, kind, int(size) if size.isdigit() else 0
    return None
