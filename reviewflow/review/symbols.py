"""Where a tool loop's symbol tools find the code index: a small value the flow hands every
tool loop of a review with `review.context` on (None with it off: the symbol tools are then
not offered and the review is as it was without them).

It names the index store (`<home>/index`, or `<shared store>/index` on Dask) and, for a
working-tree snapshot, the change's paths (HEAD's tree is overlaid with them, as the index
stage does). The index is loaded on a loop's first symbol call and kept for that loop only:
nothing is shared across loops or reviews.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ReviewSettings
from reviewflow.context.query import CodeIndex
from reviewflow.git.models import Change
from reviewflow.review.newside import change_paths, paths_index
from reviewflow.review.packs import store_dir
from reviewflow.review.reader import Snapshot


class SymbolSource(BaseModel):
    """The index store and, for a working-tree snapshot, the change's paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store_dir: str
    paths: tuple[str, ...] = ()

    def loader(self, snapshot: Snapshot) -> Callable[[], CodeIndex]:
        """What loads the index of `snapshot` (the tools' snapshot, maybe a shipped one)."""
        return partial(paths_index, snapshot, list(self.paths), Path(self.store_dir))


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
    source: SymbolSource | None, snapshot: Snapshot
) -> Callable[[], CodeIndex] | None:
    return None if source is None else source.loader(snapshot)
