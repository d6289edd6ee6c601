"""Helpers for the code index tests: a real Git repository, a store, the index of HEAD."""

from __future__ import annotations

from pathlib import Path

from reviewflow.context.build import index_tree
from reviewflow.context.query import CodeIndex
from reviewflow.context.store import IndexStore
from tests.gitutil import GitRepo


def make_repo(root: Path, files: dict[str, str]) -> GitRepo:
    repo = GitRepo.init(root)
    repo.git("config", "user.email", "t@example.com")
    repo.git("config", "user.name", "T")
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("files")
    return repo


def index_of(repo: GitRepo, store_dir: Path, tree_ish: str = "HEAD") -> CodeIndex:
    with IndexStore(store_dir) as store:
        return index_tree(repo.root, tree_ish, store)
