"""A whole-file audit's change: the files as they are, each read as an added file (no diff).

The files come from the working tree by default (what is on disk, uncommitted edits included:
the files Git tracks and the untracked ones it does not ignore, as a workspace review sees
them), or from a commit's tree when the audit names one (`--commit`). Each becomes the diff
that adds it (`untracked.added_file`), so the rest of the review (rules, filter, chunking,
placement, fingerprints, reports) treats it as a wholly new file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reviewflow.errors import ConfigError, GitError
from reviewflow.git.models import ChangeSpec, FileDiff, FileStatus
from reviewflow.git.quoting import decode_path
from reviewflow.git.runner import run_git
from reviewflow.git.snapshot import resolve_commit
from reviewflow.git.untracked import MAX_UNTRACKED_BYTES, added_file, read_entry

_GITLINK = "160000"  # a submodule: another repository, never read
_LIMIT = MAX_UNTRACKED_BYTES  # a blob larger is not read: the filter leaves it out as too large


@dataclass(frozen=True, slots=True)
class Audited:
    """The audit's files, the commit it read (None: the working tree) and HEAD, and warnings."""

    files: list[FileDiff]
    commit: str | None
    head: str | None
    warnings: list[str]


def repo_relative(root: Path, given: str) -> str:
    """`given` (absolute, or relative to the repository's top) as a path from the top, in
    Git's `/` form; "" for the top itself. ConfigError (one line) when it is outside."""
    path = Path(given)
    if not path.is_absolute():
        path = root / path
    top = Path(os.path.realpath(root))
    # Resolve the directories above it (a symlinked /tmp, `..`), not the file itself: a
    # symlink inside the repository is audited as the link Git tracks.
    if path.name in ("", ".", ".."):
        full = Path(os.path.realpath(path))
    else:
        full = Path(os.path.realpath(path.parent)) / path.name
    if not full.is_relative_to(top):  # a symlink from outside into the repository
        full = Path(os.path.realpath(full))
    if not full.is_relative_to(top):
        raise ConfigError(f"cannot audit '{given}': it is outside the repository {root}")
    parts = full.relative_to(top).parts
    if parts[:1] == (".git",):
        raise ConfigError(f"cannot audit '{given}': it is inside the repository's .git directory")
    return PurePosixPath(*parts).as_posix() if parts else ""


def _under(path: str, wanted: tuple[str, ...]) -> bool:
    return any(not w or path == w or path.startswith(w + "/") for w in wanted)


def _pick(
    listed: Iterable[str], wanted: tuple[str, ...], shown: tuple[str, ...], where: str
) -> list[str]:
    """The listed paths under `wanted` (every one when none is wanted); ConfigError naming the
    first wanted path (as the user gave it, `shown`) that holds none."""
    paths = sorted(set(listed))
    if not wanted:
        return paths
    for want, given in zip(wanted, shown, strict=True):
        if not any(_under(p, (want,)) for p in paths):
            raise ConfigError(f"nothing to audit at '{given}' {where}")
    return [p for p in paths if _under(p, wanted)]


def _working_tree(
    root: Path, wanted: tuple[str, ...], shown: tuple[str, ...], digest: hashlib._Hash
) -> tuple[list[FileDiff], list[str]]:
    for rel, given in zip(wanted, shown, strict=True):
        if not os.path.lexists(root / rel):
            raise ConfigError(f"cannot audit '{given}': no such file or directory")
    args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = (decode_path(raw) for raw in run_git(root, args).split(b"\0") if raw)
    files: list[FileDiff] = []
    warnings: list[str] = []
    for path in _pick(listed, wanted, shown, "(Git ignores it, or it holds no file)"):
        raw = os.fsencode(path)
        try:
            found = read_entry(os.path.join(os.fsencode(root), raw))
        except FileNotFoundError:
            continue  # tracked, deleted on disk: not there to audit
        except OSError as err:
            warnings.append(f"file {path!r} not readable: {err.strerror or err}")
            continue
        if found is None:
            continue  # a directory (a submodule, a nested repository) or a special file
        mode, data, size = found
        files.append(_added(path, mode, data, size, digest))
    return files, warnings


def _tree(
    root: Path, sha: str, wanted: tuple[str, ...], shown: tuple[str, ...], digest: hashlib._Hash
) -> list[FileDiff]:
    listing = run_git(root, ["ls-tree", "-r", "-z", "-l", "--full-tree", sha])
    entries: dict[str, tuple[str, str, int]] = {}
    for row in listing.split(b"\0"):
        if not row:
            continue
        meta, _, raw = row.partition(b"\t")
        mode, kind, obj, length = meta.decode("ascii").split()
        if kind == "blob" and mode != _GITLINK:  # ls-tree sizes a blob the store lacks `BAD`
            entries[decode_path(raw)] = (mode, obj, int(length) if length.isdigit() else -1)
    picked = _pick(entries, wanted, shown, f"in commit {sha[:12]}")
    for path in picked:
        if entries[path][2] < 0:
            raise GitError(_missing(path, entries[path][1]))
    blobs = _read_blobs(root, [entries[p][1] for p in picked if entries[p][2] <= _LIMIT])
    files = []
    for path in picked:
        mode, obj, size = entries[path]
        files.append(_added(path, mode, blobs.get(obj) if size <= _LIMIT else None, size, digest))
    return files


def _read_blobs(root: Path, shas: list[str]) -> dict[str, bytes]:
    """The content of each blob, read by one `git cat-file --batch`."""
    if not shas:
        return {}
    out = run_git(root, ["cat-file", "--batch"], stdin="".join(s + "\n" for s in shas).encode())
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode("ascii", "replace").split()
        if len(header) != 3:  # `<sha> missing`: gone since ls-tree sized it
            raise GitError(_missing(None, header[0]))
        obj, _, length = header
        start = end + 1
        blobs[obj] = out[start : start + int(length)]
        at = start + int(length) + 1  # the newline after the content
    return blobs


def _missing(path: str | None, obj: str) -> str:
    where = f"{path!r} ({obj[:12]})" if path is not None else obj[:12]
    return f"the audited commit's tree names a file this repository lacks: {where}"


def _added(path: str, mode: str, data: bytes | None, size: int, digest: hashlib._Hash) -> FileDiff:
    name = os.fsencode(path)
    if data is None:  # over the limit: left out as too large by the filter
        digest.update(b"audit-unread\0%s\0%s\0%d\0" % (name, mode.encode(), size))
        return FileDiff(path, None, FileStatus.ADDED, new_mode=mode, unread_bytes=size)
    digest.update(b"audit\0%s\0%s\0%d\0" % (name, mode.encode(), len(data)))
    digest.update(data)
    return added_file(path, mode, data)


def audit_files(root: Path, spec: ChangeSpec, digest: hashlib._Hash) -> Audited:
    """The files `spec` audits, each as the diff that adds it; ConfigError for a path that is
    not there (or holds nothing to audit), GitError for a commit that is not one."""
    shown = spec.paths
    wanted = tuple(repo_relative(root, p) for p in shown)
    head = _head(root)
    if spec.commit is not None:
        sha = resolve_commit(root, spec.commit)
        return Audited(_tree(root, sha, wanted, shown, digest), sha, sha, [])
    files, warnings = _working_tree(root, wanted, shown, digest)
    return Audited(files, None, head, warnings)


def _head(root: Path) -> str | None:
    try:
        return resolve_commit(root, "HEAD")
    except GitError:  # unborn: nothing committed yet
        return None
