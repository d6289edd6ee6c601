"""Read-only access to the post-change snapshot the tools read, confined to the repository.

Commit and range reviews read the reviewed ref through git (`ref` is its SHA); workspace and
stdin reviews read the working tree. A snapshot shipped to workers that cannot see the
repository (`review.shared_store`) is read from this machine's clone of its bundle
(reviewflow.git.bundle). Every path the model names goes through `confine`: absolute paths,
`..`, `.git` and symlinks that leave the repository are refused.

Names are handled as the change holds them (`reviewflow.git.encoding.shown`): a name's bytes
that are not UTF-8 as `\\xNN`, read back here where Git or the file system is given the name.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from reviewflow.errors import GitError, ToolError
from reviewflow.git.bundle import bundle_snapshot, clone_of
from reviewflow.git.encoding import from_shown, read_attributes, shown
from reviewflow.git.runner import run_git

SYMLINK_MODE = "120000"
MAX_SYMLINK_HOPS = 16


class Snapshot(BaseModel):
    """What the tools read: a commit SHA of the repository, or its working tree (`ref` None)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo_root: str
    ref: str | None = None
    bundle: str | None = None  # a shipped snapshot: its bundle in the shared store (`ref` in it)

    @property
    def root(self) -> Path:
        """Where git reads the snapshot: the repository, or this machine's clone of the
        bundle of a shipped one (cloned on first use)."""
        if self.bundle is not None and self.ref is not None:
            return clone_of(Path(self.bundle), self.ref)
        return Path(self.repo_root)


def ship(snapshot: Snapshot, store: Path) -> Snapshot:
    """`snapshot` as workers that cannot see the repository read it: a commit of its tree in
    a bundle in `store` (written once per tree), read from a clone where it is used."""
    bundle, commit = bundle_snapshot(snapshot.root, snapshot.ref, store)
    return Snapshot(repo_root=snapshot.repo_root, ref=commit, bundle=str(bundle))


def normalize(path: str) -> str:
    """`path` as a clean repository-relative path (as Git names it: `\\xNN` read back as the
    byte); ToolError for absolute paths and `..`."""
    text = from_shown(path.strip()).replace("\\", "/")
    if not text or "\0" in text:
        raise ToolError("file_path is empty")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise ToolError(f"'{path}' is absolute: give a path relative to the repository root")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ToolError(f"'{path}' uses '..': paths must stay inside the repository")
    if not parts:
        raise ToolError("file_path names the repository root, not a file")
    if parts[0] == ".git":
        raise ToolError(f"'{path}' is inside .git, which is not readable")
    return "/".join(parts)


def confine(snapshot: Snapshot, path: str) -> str:
    """The repository-relative path `path` reads, after symlinks inside the repository (as
    shown); ToolError when it is absolute, uses `..`, or a symlink takes it out of the
    repository."""
    clean = normalize(path)
    if snapshot.ref is None:
        return shown(_confine_worktree(snapshot.root, clean, path))
    return shown(_confine_tree(snapshot, clean, path))


def _confine_worktree(root: Path, clean: str, original: str) -> str:
    real_root = root.resolve()
    target = (root / clean).resolve()
    if not target.is_relative_to(real_root):
        raise ToolError(f"'{original}' leaves the repository through a symlink")
    relative = target.relative_to(real_root).as_posix()
    if relative == "." or relative.split("/")[0] == ".git":
        raise ToolError(f"'{original}' is not a readable file of the repository")
    return relative


def _confine_tree(snapshot: Snapshot, clean: str, original: str) -> str:
    parts = clean.split("/")
    for _ in range(MAX_SYMLINK_HOPS):
        link = _first_symlink(snapshot, parts)
        if link is None:
            return "/".join(parts)
        index, target = link
        if target.startswith("/"):
            raise ToolError(f"'{original}' leaves the repository through a symlink")
        joined = posixpath.normpath(posixpath.join(*parts[:index], target) if index else target)
        if joined == ".." or joined.startswith("../") or joined == ".":
            raise ToolError(f"'{original}' leaves the repository through a symlink")
        parts = joined.split("/") + parts[index + 1 :]
    raise ToolError(f"'{original}' goes through too many symlinks")


def _first_symlink(snapshot: Snapshot, parts: list[str]) -> tuple[int, str] | None:
    """The index of the first symlink among the prefixes of `parts` at the ref, and its target."""
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    out = _git(snapshot, ["ls-tree", "-z", "--full-tree", str(snapshot.ref), "--", *prefixes])
    modes = {}
    for entry in out.split(b"\0"):
        if b"\t" in entry:
            meta, name = entry.split(b"\t", 1)
            modes[os.fsdecode(name)] = meta.split(b" ")[0].decode("ascii")
    for index, prefix in enumerate(prefixes):
        if modes.get(prefix) == SYMLINK_MODE:
            target = _git(snapshot, ["cat-file", "blob", f"{snapshot.ref}:{prefix}"])
            return index, os.fsdecode(target)
    return None


def read_bytes(snapshot: Snapshot, path: str) -> bytes:
    """The content of the confined `path` in the snapshot; ToolError when it is not a file."""
    name = from_shown(path)
    if snapshot.ref is None:
        target = snapshot.root / name
        if not target.is_file():
            raise ToolError(f"'{path}' does not exist in the reviewed snapshot")
        if _ignored(snapshot, name):  # `.env` and build output: not part of the change's code
            raise ToolError(f"'{path}' is ignored by git (.gitignore): not readable")
        try:
            return target.read_bytes()
        except OSError as err:
            raise ToolError(f"'{path}' cannot be read: {err.strerror or err}") from None
    try:
        return run_git(snapshot.root, ["cat-file", "blob", f"{snapshot.ref}:{name}"])
    except GitError:
        raise ToolError(f"'{path}' does not exist in the reviewed snapshot") from None


def declared_encoding(snapshot: Snapshot, path: str) -> str | None:
    """The encoding the snapshot's `.gitattributes` give `path` (`encoding`, else
    `working-tree-encoding`), as the change's text was decoded; None when none is set."""
    name = from_shown(path)
    return read_attributes(snapshot.root, [name], snapshot.ref).get(name)


def _ignored(snapshot: Snapshot, path: str) -> bool:
    """Whether `path` is an untracked working-tree file that git ignores (tracked files, and
    untracked ones that are not ignored, are readable)."""
    args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", path]
    try:
        listed = run_git(snapshot.root, args, options=("--literal-pathspecs",))
    except GitError as err:
        raise ToolError(str(err)) from None
    return bool(listed.strip(b"\0"))


def list_files(snapshot: Snapshot) -> list[str]:
    """Every file path of the snapshot (tracked files; in the working tree also untracked ones
    that are not ignored, and not tracked ones deleted from it)."""
    if snapshot.ref is None:
        args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    else:
        args = ["ls-tree", "-r", "-z", "--name-only", "--full-tree", snapshot.ref]
    names = [name for name in _git(snapshot, args).split(b"\0") if name]
    if snapshot.ref is None:
        root = os.fsencode(snapshot.root)
        names = [name for name in names if os.path.lexists(os.path.join(root, name))]
    return sorted({shown(os.fsdecode(name)) for name in names})


def grep(snapshot: Snapshot, flags: list[str], text: str, pathspecs: list[str]) -> bytes:
    """Raw `git grep -z` output (path NUL line NUL text) over the snapshot; empty: no match."""
    args = ["grep", "-z", "-n", "-I", "--no-color", "--full-name", *flags, "-e", text]
    if snapshot.ref is None:
        args.insert(1, "--untracked")
    else:
        args.append(snapshot.ref)
    args += ["--", *(from_shown(spec) for spec in pathspecs)]
    return _git(snapshot, args, ok=(0, 1))


def _git(snapshot: Snapshot, args: list[str], ok: tuple[int, ...] = (0,)) -> bytes:
    try:
        return run_git(snapshot.root, args, ok=ok)
    except GitError as err:
        raise ToolError(str(err)) from None
