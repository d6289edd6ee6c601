"""The code index of a review's new side: the tree the change leads to, as the model's tools
read it (`reviewflow.review.reader.Snapshot`).

A commit or range review indexes `ref^{tree}` (of the shipped clone when the snapshot was
shipped). A working-tree review (workspace, `--diff -`) indexes HEAD's tree with the change's
files overlaid as the working tree holds them (deleted ones removed, untracked ones added),
written through a temporary index of a scratch repository that borrows the repository's objects
(as `reviewflow.git.bundle` does): nothing is written to the reviewed repository.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from reviewflow.context.build import Progress, index_tree
from reviewflow.context.query import CodeIndex
from reviewflow.context.store import IndexStore
from reviewflow.errors import GitError
from reviewflow.git.encoding import from_shown
from reviewflow.git.models import Change
from reviewflow.git.runner import git_command, git_env, run_git
from reviewflow.review.reader import Snapshot

STORE_DIR = "index"
"""The store's directory under the reviewflow home, or under `review.shared_store`."""


def new_side_index(
    snapshot: Snapshot, change: Change, store_dir: Path, progress: Progress | None = None
) -> CodeIndex:
    """The `CodeIndex` of the review's new side, its records kept in the store at `store_dir`.

    Cost: `git ls-tree` of the whole tree, a parse of only the blobs the store has no record
    of (a full build of a 2,300-file C tree takes ~5 s the first time, one commit's update
    ~0.1 s), then every record of the tree loaded to query (~0.7 s on that tree). A working
    tree adds `git read-tree HEAD` into a temporary index and one `git update-index` of the
    change's files: it reads only those files, whatever the size of the tree.
    """
    return paths_index(snapshot, change_paths(change), store_dir, progress)


def paths_index(
    snapshot: Snapshot, paths: list[str], store_dir: Path, progress: Progress | None = None
) -> CodeIndex:
    """`new_side_index` given the change's `change_paths` (all a working tree needs of it):
    what the symbol tools of a tool loop load, which have the paths but not the change."""
    with IndexStore(store_dir) as store:
        if snapshot.ref is not None:
            return index_tree(snapshot.root, f"{snapshot.ref}^{{tree}}", store, progress)
        root = snapshot.root
        with tempfile.TemporaryDirectory(prefix="reviewflow-index-") as tmp:
            scratch = Path(tmp) / "scratch.git"
            tree = _working_tree(root, scratch, paths)
            index = index_tree(scratch, tree, store, progress)
            index.cache_lines(paths)  # their blobs live in the scratch repository only
        index.repo = root  # every other blob is HEAD's, in the repository
        return index


def change_paths(change: Change) -> list[str]:
    """The new-side paths of the change's files, and the old paths of those moved away."""
    paths = {file.path for file in change.files}
    paths.update(file.old_path for file in change.files if file.old_path)
    return sorted(paths)


def _working_tree(root: Path, scratch: Path, paths: list[str]) -> str:
    """HEAD's tree with `paths` as the working tree holds them (absent ones removed), written
    in `scratch`, a bare repository borrowing `root`'s objects: the tree's id."""
    run_git(root, ["init", "-q", "--bare", str(scratch)])
    objects = run_git(root, ["rev-parse", "--git-path", "objects"]).decode().strip()
    (scratch / "objects" / "info" / "alternates").write_text(str((root / objects).resolve()) + "\n")
    git = ("--git-dir", str(scratch), "--work-tree", str(root))
    try:
        head = run_git(root, ["rev-parse", "--verify", "-q", "HEAD^{tree}"]).decode().strip()
    except GitError:  # an unborn branch: the change is the whole tree
        head = ""
    if head:
        run_git(root, ["read-tree", head], options=git)
    if paths:
        names = b"".join(
            from_shown(path).encode("utf-8", "surrogateescape") + b"\0" for path in paths
        )
        _update_index(root, git, names)
    return run_git(root, ["write-tree"], options=git).decode().strip()


def _update_index(root: Path, git: tuple[str, ...], names: bytes) -> None:
    """`git update-index --add --remove` of the NUL-separated `names`, from the working tree."""
    result = subprocess.run(
        git_command(["update-index", "--add", "--remove", "-z", "--stdin"], git),
        cwd=root,
        env=git_env(),
        input=names,
        capture_output=True,
    )
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git update-index failed: {message[0] if message else result.returncode}")
