"""What a Dask worker runs for each stage the review's Dask runner submits (`run_stage`): Prefect's
task engine, inside its flow run's Prefect settings and with one Prefect API client per run and
worker, both held by the run's worker plugin (`run_context_plugin`), built once on each worker.

Prefect's own Dask client sends the whole settings with every task and the worker rebuilds them
(`pydantic-settings` reads the environment, `.env` files and the profiles file again) and opens
two API clients (each a new SSL context) for every task: measured on the idle 200-file bench, that
was most of a worker's time per stage and a third of the caller's (bench/RESULTS.md, "Dask
overhead (issue 40)"). Here the settings travel once per run, in the plugin, and each task gets
the task engine's usual context with them: the same task run, states, cache and result storage.

Light to import: a worker unpickles the plugin in its event loop; Prefect is imported on first use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from functools import cache
from typing import Any
from uuid import UUID

ONCE = ("flow", "parameters")  # the flow run context's entries sent once per run, in the plugin


def plugin_name(run_id: str) -> str:
    """The name of the worker plugin that holds the runner `run_id`'s Prefect context."""
    return f"reviewflow-prefect-{run_id}"


@cache
def run_context_plugin() -> type[Any]:
    """`RunContext`, defined on first use: Dask is imported only by a review that runs on it."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class RunContext(WorkerPlugin):
        """One flow run's Prefect settings (as its process serialized them) and API client on
        one Dask worker: built by the first stage that runs there, closed when the run removes
        the plugin (or the worker ends)."""

        def __init__(self, run_id: str, settings: dict[str, Any], flow_run: dict[str, Any]):
            self.name = plugin_name(run_id)
            self.settings = settings  # SettingsContext.serialize(): no secret of ours in it
            self.flow_run = flow_run  # the flow run context's entries that are the same each task
            self._lock = threading.Lock()  # the worker's task threads share the client
            self._contexts: tuple[Any, Any] | None = None  # built on the worker, never pickled

        def __getstate__(self) -> dict[str, Any]:
            return {"name": self.name, "settings": self.settings, "flow_run": self.flow_run}

        def __setstate__(self, state: dict[str, Any]) -> None:
            self.name, self.settings = state["name"], state["settings"]
            self.flow_run = state["flow_run"]
            self._lock, self._contexts = threading.Lock(), None

        @contextlib.contextmanager
        def entered(self) -> Iterator[None]:
            """The run's settings and its API client, current in this thread for one task
            (a context is entered once: each task enters copies)."""
            with self._lock:
                settings, clients = self._built()
            with settings.model_copy():
                clients = clients.model_copy()
                with self._lock:  # the shared client counts its users: one thread at a time
                    clients.__enter__()
                try:
                    yield
                finally:
                    with self._lock:
                        clients.__exit__(None, None, None)

        def _built(self) -> tuple[Any, Any]:
            if self._contexts is None:
                from prefect.context import SettingsContext, SyncClientContext

                settings = SettingsContext(**self.settings)  # as Prefect hydrates it, once
                with settings.model_copy():
                    clients = SyncClientContext()  # its client reads the run's API URL
                clients.client.__enter__()  # held open across the run's tasks
                self._contexts = settings, clients
            return self._contexts

        def teardown(self, worker: Any) -> None:
            """The run's hold on its client ends: the client closes now, or when the last stage
            still in it leaves (a cancel's stage ending Cancelled still reports its state)."""
            with self._lock:
                if self._contexts is not None:
                    self._contexts[1].client.__exit__(None, None, None)
                    self._contexts = None

    return RunContext


def held_once(context: dict[str, Any]) -> dict[str, Any]:
    """Take out of a task's serialized `context` what is the same for every task of its flow
    run and heavy to send each time (the flow, its function pickled by value with the task
    runner's class; the flow's parameters): the run's plugin holds them, `run_in` puts them
    back."""
    flow_run = context.get("flow_run_context") or {}
    return {name: flow_run.pop(name) for name in ONCE if name in flow_run}


def run_stage(
    run_id: str,
    task: Any,
    task_run_id: UUID,
    parameters: dict[str, Any],
    dependencies: dict[str, Any],
    context: dict[str, Any],
) -> Any:
    """On a Dask worker: run `task` as Prefect's Dask client would (its final state returned),
    inside the run `run_id`'s settings and API client (`context` carries no settings)."""
    from distributed import get_worker

    plugin = get_worker().plugins.get(plugin_name(run_id))
    if plugin is None:
        raise RuntimeError(f"this Dask worker has no {plugin_name(run_id)} plugin")
    return run_in(plugin, task, task_run_id, parameters, dependencies, context)


def run_in(
    plugin: Any,
    task: Any,
    task_run_id: UUID,
    parameters: dict[str, Any],
    dependencies: dict[str, Any],
    context: dict[str, Any],
) -> Any:
    """Run `task` with Prefect's task engine in the run context `plugin` holds; its final state.
    `context` is Prefect's serialized context less what the plugin holds (`held_once`)."""
    from prefect.task_engine import run_task_sync

    if context.get("flow_run_context") is not None and plugin.flow_run:
        context["flow_run_context"] = {**context["flow_run_context"], **plugin.flow_run}
    with plugin.entered():
        return run_task_sync(
            task,
            task_run_id=task_run_id,
            parameters=parameters,
            return_type="state",
            dependencies=dependencies,
            context=context,
        )
