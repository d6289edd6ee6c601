"""The context packs of a review: each kept file's pack (`reviewflow.context.pack`) rendered for
the main request, built in one process from one load of the new side's index.

What a pack may name: any indexed file but those the review's filter leaves out as vendored or
generated (`node_modules/`, `vendor/`, `third_party/`, `*.min.js`, `*.generated.*`, protobuf
output) or that a user `exclude` pattern names (a user `include` brings a file back). Tests stay:
a test calling a changed function is one of its uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ReviewSettings
from reviewflow.context.build import Progress
from reviewflow.context.pack import ContextPack, build_pack
from reviewflow.context.records import IndexStats
from reviewflow.errors import ToolError
from reviewflow.git.encoding import from_shown
from reviewflow.git.models import FileStatus
from reviewflow.git.snapshot import read_blob
from reviewflow.review.newside import STORE_DIR, new_side_index
from reviewflow.review.reader import Snapshot, read_bytes
from reviewflow.review.tokens import estimate_tokens
from reviewflow.rules.loader import RuleSet
from reviewflow.select.scope import Scope

_VENDORED_DIRS = frozenset({"node_modules", "vendor", "third_party"})
_GENERATED = re.compile(r"(?i).*(?:\.min\.(?:js|css)|\.generated\..*|_pb2(?:_grpc)?\.py|\.pb\.go)$")


class FileContext(BaseModel):
    """One file's pack as the main request carries it: its text and its tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    tokens: int


def store_dir(home: str, shared_store: str | None) -> Path:
    """Where the index is kept: the shared store's `index/` on Dask, else the home's."""
    return Path(shared_store or home) / STORE_DIR


def file_packs(
    scope: Scope,
    snapshot: Snapshot,
    settings: ReviewSettings,
    home: str,
    progress: Progress | None = None,
) -> tuple[list[ContextPack], IndexStats]:
    """The pack of every kept file, in the order the files are kept (an empty pack for a file
    with nothing to say), and the index build's figures. Cost: `new_side_index` once, then a
    parse of each kept file's two sides."""
    index = new_side_index(snapshot, scope.change, store_dir(home, settings.shared_store), progress)
    change = scope.change
    old_ref = change.base_sha or change.head_sha
    eligible = eligible_for(scope.rules)
    packs = []
    for item in scope.selection.kept:
        file = item.file
        old_text = None
        if old_ref is not None and file.status is not FileStatus.ADDED:
            old = read_blob(change.repo_root, old_ref, from_shown(file.old_path or file.path))
            old_text = None if old is None else old.decode("utf-8", "replace")
        packs.append(
            build_pack(
                file,
                old_text,
                _new_text(snapshot, file.path),
                index,
                budget_tokens=settings.context_tokens,
                count_tokens=estimate_tokens,
                eligible=eligible,
            )
        )
    return packs, index.stats


def context_packs(
    scope: Scope,
    snapshot: Snapshot,
    settings: ReviewSettings,
    home: str,
    progress: Progress | None = None,
) -> dict[str, FileContext]:
    """What the main requests carry: path -> the rendered pack and its tokens, for each kept
    file with something to say; {} with `review.context` off or nothing kept."""
    if not settings.context or not scope.selection.kept:
        return {}
    packs, _ = file_packs(scope, snapshot, settings, home, progress)
    rendered = {pack.path: pack.render() for pack in packs}
    return {
        path: FileContext(text=text, tokens=estimate_tokens(text))
        for path, text in rendered.items()
        if text.strip()
    }


def _new_text(snapshot: Snapshot, path: str) -> str | None:
    try:
        return read_bytes(snapshot, path).decode("utf-8", "replace")
    except ToolError:
        return None


def eligible_for(rules: RuleSet) -> Callable[[str], bool]:
    """Whether an indexed file may fill a pack (the module's first lines say which)."""

    def eligible(path: str) -> bool:
        if rules.exclude.match(path) is not None:
            return False
        if rules.include.match(path) is not None:
            return True
        parts = path.split("/")
        vendored = any(part.lower() in _VENDORED_DIRS for part in parts[:-1])
        return not vendored and _GENERATED.match(parts[-1]) is None

    return eligible
