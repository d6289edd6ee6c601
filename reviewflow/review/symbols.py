"""Where the symbol tools find the code index: a small value the flow hands every tool loop
and every verification of a review with `review.context` on (None with it off: the symbol
tools are then offered nowhere and the review is as it was without them).

It names the index store (`<home>/index`, or `<shared store>/index` when the review has a
shared store: Dask workers that cannot see the home read the index the caller's index stage
built there) and, for a working-tree snapshot, the change's paths (HEAD's tree is overlaid with
them, as the index stage does). The index is loaded on a session's first symbol call and kept
for that session only (a tool loop, or one finding's verification): nothing is shared across
sessions or reviews, and nothing is held in module state.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ReviewSettings
from reviewflow.context.query import CodeIndex
from reviewflow.context.records import IndexStats
from reviewflow.git.models import Change
from reviewflow.review.newside import change_paths, paths_index
from reviewflow.review.packs import store_dir
from reviewflow.review.reader import Snapshot


class SymbolSource(BaseModel):
    """The index store and, for a working-tree snapshot, the change's paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_dir: str
    paths: tuple[str, ...] = ()

    def loader(
        self, snapshot: Snapshot, report: Callable[[str], None] | None = None
    ) -> Callable[[], CodeIndex]:
        """What loads the index of `snapshot` (the tools' snapshot, maybe a shipped one);
        `report` is told, in one line, where it was loaded from and what had to be parsed."""
        return partial(_load, snapshot, list(self.paths), Path(self.store_dir), report)


def _load(
    snapshot: Snapshot, paths: list[str], store: Path, report: Callable[[str], None] | None
) -> CodeIndex:
    index = paths_index(snapshot, paths, store)
    if report is not None:
        report(loaded_line(store, index.stats))
    return index


def loaded_line(store: Path, stats: IndexStats) -> str:
    """What a session says of the index its symbol tools loaded: where from, and how many
    files it found indexed (a worker that finds the caller's index parses none)."""
    return (
        f"code index for the symbol tools: {stats.files} source files from {store} "
        f"({stats.parsed} parsed, {stats.reused} reused) in {stats.seconds:.2f} s"
    )


def symbol_source(
    change: Change, settings: ReviewSettings, home: str | Path
) -> SymbolSource | None:
    """The review's `SymbolSource`; None with `review.context` off."""
    if not settings.context:
        return None
    store = store_dir(str(home), settings.shared_store)
    paths = change_paths(change) if change.snapshot_ref is None else []
    return SymbolSource(store_dir=str(store), paths=tuple(paths))


def symbol_loader(
    source: SymbolSource | None, snapshot: Snapshot, report: Callable[[str], None] | None = None
) -> Callable[[], CodeIndex] | None:
    """`source`'s loader for `snapshot`, or None (no symbol tools) without a source."""
    return None if source is None else source.loader(snapshot, report)
