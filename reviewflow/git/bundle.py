"""A reviewed snapshot as a Git bundle in a shared store, for workers that cannot see the
repository (a remote Dask cluster): the caller writes it once per tree, a worker clones it once.

The bundle holds one parentless commit of the snapshot's tree and nothing else of the history.
It is built in a temporary repository that borrows the repository's objects (alternates), so
nothing is written to the reviewed repository: not an object, a ref or its index. A working-tree
snapshot becomes a tree the same way `git add -A` would see it (ignored files stay out), through
that temporary repository's own index.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.runner import run_git

_HEAD = "refs/heads/snapshot"
_IDENTITY = ("-c", "user.name=reviewflow", "-c", "user.email=reviewflow@localhost")


def bundle_snapshot(repo_root: Path, ref: str | None, store: Path) -> tuple[Path, str]:
    """The bundle of the snapshot (`ref`, or the working tree when None) in `store`, written
    unless one of the same tree is there, and the commit it holds."""
    snapshots = store / "snapshots"
    snapshots.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reviewflow-bundle-") as tmp:
        scratch = Path(tmp) / "scratch.git"
        _borrowing_repository(repo_root, scratch)
        git = ("--git-dir", str(scratch))
        if ref is None:
            work = (*git, "--work-tree", str(repo_root))
            run_git(repo_root, ["add", "-A", "--", "."], options=work)
            tree = _text(run_git(repo_root, ["write-tree"], options=git))
        else:
            tree = _text(run_git(repo_root, ["rev-parse", f"{ref}^{{tree}}"]))
        bundle = snapshots / f"{tree}.bundle"
        if bundle.exists():
            return bundle, bundle_commit(bundle)
        message = ["commit-tree", tree, "-m", "reviewflow snapshot"]
        commit = _text(run_git(repo_root, message, options=(*_IDENTITY, *git)))
        run_git(repo_root, ["update-ref", _HEAD, commit], options=git)
        partial = snapshots / f".{tree}.{os.getpid()}.partial"
        run_git(repo_root, ["bundle", "create", "-q", str(partial), _HEAD], options=git)
        partial.chmod(0o600)  # the reviewed source: the user's alone (workers run as the user)
        partial.replace(bundle)  # whole or absent, whoever writes it at the same time
    return bundle, commit


def _borrowing_repository(repo_root: Path, scratch: Path) -> None:
    """An empty bare repository at `scratch` that reads `repo_root`'s objects and excludes."""
    run_git(repo_root, ["init", "-q", "--bare", str(scratch)])
    objects, exclude = (_git_path(repo_root, name) for name in ("objects", "info/exclude"))
    (scratch / "objects" / "info" / "alternates").write_text(objects + "\n")
    if Path(exclude).is_file():
        (scratch / "info").mkdir(exist_ok=True)
        shutil.copyfile(exclude, scratch / "info" / "exclude")


def _git_path(repo_root: Path, name: str) -> str:
    return _text(run_git(repo_root, ["rev-parse", "--path-format=absolute", "--git-path", name]))


def bundle_commit(bundle: Path) -> str:
    """The commit a snapshot bundle holds."""
    heads = _text(run_git(bundle.parent, ["bundle", "list-heads", str(bundle), _HEAD]))
    if not heads:
        raise GitError(f"{bundle} is not a reviewflow snapshot bundle")
    return heads.split()[0]


def clone_of(bundle: Path, commit: str) -> Path:
    """This machine's bare clone of `bundle` (made once, in its temporary directory), where
    git reads `commit`."""
    clones = Path(tempfile.gettempdir()) / f"reviewflow-snapshots-{os.getuid()}"
    clone = clones / commit
    if clone.is_dir():
        return clone
    clones.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{commit}.", dir=clones))
    try:
        run_git(clones, ["clone", "-q", "--bare", str(bundle), str(partial / "repo.git")])
        try:
            (partial / "repo.git").rename(clone)
        except OSError:  # another thread of this worker cloned it first
            if not clone.is_dir():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return clone


def _text(out: bytes) -> str:
    return out.decode("utf-8", "replace").strip()
