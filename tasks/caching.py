"""Cache keys and result storage for the model stages.

A stage's key hashes every parameter of its task run that can change the answer — the file's
change, the snapshot identity the tools read, the rule, the model (protocol, name, endpoint), the
review settings that stage reads, the language — plus reviewflow's version and every prompt
template. It never sees the API key (tasks get a key-free `ProviderHandle`, of which only the
model identity is hashed), timestamps or report paths. Results are JSON files named by the key
under `<reviewflow home>/cache/results`, written as each task run completes, so a killed review
keeps what it finished.

An incomplete result (a provider that kept failing, an exhausted tool loop) is never reused: the
key function forgets such a record before Prefect looks it up, so the next run pays for it again.
It reads the record through Prefect's public result store (`ResultStore.read`, documented in
`prefect.results`) and deletes our own file from our own results folder; nothing of Prefect's
private state (its in-memory record cache, its storage's path resolution) is touched: Prefect
decides a cache hit by `ResultStore.exists`, which reads the storage.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect.context import TaskRunContext
from prefect.filesystems import LocalFileSystem
from prefect.results import ResultStore
from prefect.settings import PREFECT_TASKS_REFRESH_CACHE
from prefect.utilities.annotations import quote
from pydantic import BaseModel

import reviewflow
from reviewflow.prompts import templates_digest

RESULTS_DIR = ("cache", "results")
T = TypeVar("T")


def results_dir(home: str | Path) -> Path:
    """Where the model stages' results are stored, under the reviewflow home."""
    return Path(home).joinpath(*RESULTS_DIR)


def as_is(value: T) -> T:
    """`value` as a task parameter that Prefect passes on without walking it (`quote`).

    Prefect otherwise visits every element of every parameter twice per task run, looking for
    futures to resolve and upstream runs to link; ours hold none (stages are submitted with
    finished values), and walking a whole diff or conversation each time was a fifth of the
    review's own CPU. Cache keys still see the plain value.
    """
    return cast(T, quote(value))


def unquoted(value: Any) -> Any:
    """A value passed `as_is` (a flow's return value, say), as it was."""
    return value.unquote() if isinstance(value, quote) else value


def stage_options(home: str | Path, refresh: bool, shared: str | None = None) -> dict[str, Any]:
    """`with_options` for a cached model stage: our storage (in the `shared` store when the
    stages run on workers that cannot see this machine), and `--no-cache` as a refresh."""
    storage = Path(shared, *RESULTS_DIR) if shared else results_dir(home)
    return {"result_storage": storage, "refresh_cache": refresh}


def stage_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """The key of one model stage's task run (see the module docstring)."""
    key = stage_key(context.task.name, parameters)
    _forget_if_incomplete(context.result_store, key)
    return key


def stage_key(task_name: str, parameters: dict[str, Any]) -> str:
    """The cache key of the stage `task_name` for `parameters` (`stage_cache_key`'s)."""
    material = [task_name, _static_material()]
    material += [[name, canonical(value)] for name, value in sorted(parameters.items())]
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{task_name}-{hashlib.sha256(text.encode()).hexdigest()}"


def stored(task: Any, parameters: dict[str, Any]) -> bool:
    """Whether Prefect's task engine will answer the task run of `task` for `parameters` from
    its stored result, without running it: a model stage (keyed by `stage_cache_key`) that is
    not refreshed, whose complete record is in its local result storage (`stage_options`).
    The Dask runner reads such a stage in the review's own process (`flows.runners`)."""
    storage = task.result_storage
    if task.cache_key_fn is not stage_cache_key or not isinstance(storage, str | Path):
        return False
    if task.refresh_cache or (task.refresh_cache is None and PREFECT_TASKS_REFRESH_CACHE.value()):
        return False
    store = ResultStore(result_storage=LocalFileSystem(basepath=str(storage)))
    try:
        record = store.read(stage_key(task.name, parameters))
    except (OSError, ValueError):
        return False  # none stored (or one Prefect cannot read either)
    return not is_incomplete(record.result)


@cache
def _static_material() -> list[str]:
    root = Path(reviewflow.__file__).parent
    folders = sorted(p.parent for p in root.glob("*/prompts/*.j2"))
    tools = sorted(root.glob("review/*.json"))
    extra = hashlib.sha256(b"".join(p.read_bytes() for p in tools)).hexdigest()
    return [reviewflow.__version__, templates_digest(*dict.fromkeys(folders)), extra]


def canonical(value: Any) -> Any:
    """A JSON-able form of a task parameter for hashing: a value's own `cache_identity()` where
    it has one (the provider handle, review settings, stage results, the reviewed files)."""
    if hasattr(value, "cache_identity"):
        return canonical(value.cache_identity())
    if isinstance(value, BaseModel):
        return canonical(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: canonical(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [canonical(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set | frozenset) else items
    if isinstance(value, Path):
        return str(value)
    return value


def _forget_if_incomplete(store: ResultStore, key: str) -> None:
    """Delete a stored result that is incomplete, so Prefect computes it again (our results are
    files in our own folder: `stage_options` makes the storage a local one)."""
    storage = store.result_storage
    if not isinstance(storage, LocalFileSystem) or storage.basepath is None:
        return
    try:
        record = store.read(key)
    except (OSError, ValueError):
        return  # no record (or one Prefect cannot read either): nothing to forget
    if is_incomplete(record.result):
        (Path(storage.basepath).expanduser().resolve() / key).unlink(missing_ok=True)


def is_incomplete(result: Any) -> bool:
    """Whether a stage result (or any in a list of them) is marked incomplete."""
    complete = getattr(result, "complete", None)  # StageResult, and Localized
    if isinstance(result, BaseModel) and isinstance(complete, bool):
        return not complete
    if isinstance(result, list | tuple):
        return any(is_incomplete(item) for item in result)
    return False
