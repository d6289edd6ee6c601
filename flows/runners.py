"""Where a review's mapped stages run: threads here, or a Dask cluster (`review.task_runner`),
how a remote cluster is checked once connected (`flows.preflight`: its workers reach the
review's Prefect API and hold the key), how a stage is sent to it (what is the same for every
stage goes once per run: `flows.dask_worker`; a stage whose result is stored is read here, not
sent) and how a cancel reaches its workers (`StoppingDask`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from prefect.context import SettingsContext
from prefect.task_runners import ThreadPoolTaskRunner

from flows.dask_worker import held_once, run_context_plugin, run_stage
from flows.dask_worker import plugin_name as context_plugin_name
from flows.preflight import Preflight, check_cluster
from reviewflow import cancel
from reviewflow.config import Config, TaskRunner
from reviewflow.config.schema import ENV_PREFIX
from reviewflow.errors import ConfigError
from reviewflow.providers.pool import ProviderHandle
from tasks.caching import as_is, stored
from tasks.pools import plugin_name, run_pools_plugin, stop_on_worker

if TYPE_CHECKING:
    from prefect_dask import DaskTaskRunner

LOCAL_DASK_WORKERS = 2
CONNECT_TIMEOUT_S = 10  # a scheduler that does not answer: the client gives up after this
STOP_WAIT_S = 2.0  # how long the runner's exit waits for the workers to be told of a cancel
# multiprocessing's resource tracker (started with the LocalCluster's worker processes, with
# this process's -W options) warns of "leaked semaphore objects" on stderr when a second signal
# ends the review at once: it cleans them up all the same, so it does that quietly.
QUIET_TRACKER = "ignore:resource_tracker:UserWarning"
WORKER_END_S = 0.5  # a cancel: how long a LocalCluster's worker gets to end before it is killed


def task_runner_for(config: Config) -> Any:
    """The task runner for `config` (its API key, if any, is still in `config.model`).

    `dask` with `review.dask_address` uses that cluster: its workers take the key from their
    own environment, and report to the review's Prefect API (Prefect hands them its URL with
    the flow run's settings); the runner asks them first whether they can (`Preflight`).
    Without an address, a LocalCluster of worker processes is started for the run, and only
    those processes get the key, in their environment (never as a task input).
    """
    if config.review.task_runner is TaskRunner.THREAD:
        return threads(config.review.concurrency)
    runner, client = stopping_dask(), {"timeout": f"{CONNECT_TIMEOUT_S}s"}
    made: Any
    if config.review.dask_address:
        made = runner(address=config.review.dask_address, client_kwargs=client)
        made.preflight = Preflight.of(config)
    else:
        made = runner(cluster_kwargs=local_cluster(config), client_kwargs=client)
    made.here_threads = config.review.concurrency  # the stored stages read in this process
    return made


def local_cluster(config: Config) -> dict[str, Any]:
    """The LocalCluster a review without `review.dask_address` starts: its worker processes
    get the key in their environment."""
    per_worker = max(1, -(-config.review.concurrency // LOCAL_DASK_WORKERS))
    return {
        "n_workers": LOCAL_DASK_WORKERS,
        "threads_per_worker": per_worker,
        "processes": True,
        "dashboard_address": None,  # no dashboard; the scheduler's own HTTP routes:
        "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},  # any free port, quietly
        "host": "127.0.0.1",
        "silence_logs": logging.CRITICAL,  # the workers' own logs are not the review's
        "env": worker_environment(config),
    }


@cache
def stopping_dask() -> type[DaskTaskRunner]:
    """`StoppingDask`, defined on first use: Dask is imported only by a review that runs on it."""
    from distributed import SpecCluster
    from distributed.utils import sync
    from prefect_dask import DaskTaskRunner

    class StoppingDask(DaskTaskRunner):
        """A DaskTaskRunner that stops on a cancel as the thread runner does.

        The review's provider pools on the workers: the first stage submitted with a handle of
        a flow run's pools registers that run's worker plugin (`tasks.pools`), which holds the
        run's pools on every worker (and any that joins); the runner's exit removes it, which
        closes them there (on a cluster of its own, the workers end with the cluster).

        The first signal (`reviewflow.cancel`) cancels every stage not finished yet and tells
        every worker to stop the review's provider pools: a worker then sends no request of
        this review again and abandons those in flight, and the stages running there end
        Cancelled (`tasks.llm.cancellable`), as on threads; those Dask cancels before they
        start never get a task run. The workers are told from a thread the signal starts (a
        signal handler must be quick); the runner's exit waits for that (bounded) before it
        closes the client or the cluster.

        A stage whose result is stored (`tasks.caching.stored`: Prefect's engine will read it,
        not run it) runs in this process, on threads, as the thread runner would run it: a
        task run of its own, Cached. Sent to a worker, its whole cost was the trip there and
        back (a cached re-run took 1.6-1.9x as long as on threads; bench/RESULTS.md).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._futures: list[Any] = []
            self._registries: set[str] = set()  # the flow runs whose pools are on the workers
            self._cancel_key: int | None = None
            self._stopping: threading.Thread | None = None
            self._run_id: str | None = None  # its worker plugin's, once a stage is submitted
            self.preflight: Preflight | None = None  # what a remote cluster's workers are asked
            self.here_threads = 1  # the threads that read stored stages in this process
            self._here: ThreadPoolTaskRunner | None = None  # entered by the flow run's process

        def duplicate(self) -> StoppingDask:
            twin = type(self)(
                address=self.address,
                cluster_class=self.cluster_class,
                cluster_kwargs=self.cluster_kwargs,
                adapt_kwargs=self.adapt_kwargs,
                client_kwargs=self.client_kwargs,
                performance_report_path=self.performance_report_path,
            )
            twin.preflight, twin.here_threads = self.preflight, self.here_threads
            return twin

        def submit(
            self,
            task: Any,
            parameters: dict[str, Any],
            wait_for: Any = None,
            dependencies: dict[str, set[Any]] | None = None,
        ) -> Any:
            handles = [v for v in parameters.values() if isinstance(v, ProviderHandle)]
            for registry in {handle.registry for handle in handles} - self._registries:
                self.client.register_plugin(run_pools_plugin()(registry))
                self._registries.add(registry)
            if wait_for or task.isasync:  # not one of our stages: as Prefect submits it
                future = super().submit(task, parameters, wait_for, dependencies)
            elif self._here is not None and stored(task, parameters):  # read here: no trip
                quoted = {name: as_is(value) for name, value in parameters.items()}
                return self._here.submit(task, quoted, dependencies=dependencies)
            else:
                future = self._submit_stage(task, parameters, dependencies or {})
            self._futures.append(future.wrapped_future)
            return future

        def _submit_stage(
            self, task: Any, parameters: dict[str, Any], dependencies: dict[str, set[Any]]
        ) -> Any:
            """What Prefect's Dask client does for a task, less its per-task costs: the settings,
            the flow (its function pickled by value) and its parameters go once, in the run's
            worker plugin (`flows.dask_worker`), the function the workers run is importable
            (pickled by name, not by value) and the key is the task run's (Dask hashed the whole
            pickled call to name it)."""
            from distributed import Future
            from prefect.context import serialize_context
            from prefect.utilities.engine import collect_task_run_inputs_sync
            from prefect_dask.task_runners import PrefectDaskFuture

            if not self._started:
                raise RuntimeError("The task runner must be started before submitting work.")
            parameters = self._optimize_futures(parameters)
            task_run_id = uuid4()
            inputs = {
                name: collect_task_run_inputs_sync(value, future_cls=Future)
                | dependencies.get(name, set())
                for name, value in parameters.items()
            }
            with settings_held_by_workers():
                context = serialize_context(
                    asset_ctx_kwargs={
                        "task": task,
                        "task_run_id": task_run_id,
                        "task_inputs": inputs,
                        "copy_to_child_ctx": True,
                    }
                )
            flow_run = held_once(context)  # the flow and its parameters: once, as the settings
            if self._run_id is None:
                self._run_id = uuid4().hex
                settings = SettingsContext.get()
                held = settings.serialize() if settings is not None else {}
                self.client.register_plugin(run_context_plugin()(self._run_id, held, flow_run))
            future = self.client.submit(
                run_stage,
                *(self._run_id, task, task_run_id, parameters, inputs, context),
                key=f"{task.fn.__name__}-{task_run_id.hex}",  # named as Dask names a call
                pure=False,
            )
            return PrefectDaskFuture(wrapped_future=future, task_run_id=task_run_id)

        def __enter__(self) -> StoppingDask:
            super().__enter__()
            if _in_a_task_on_a_worker():
                # The copy Prefect enters on a worker for each task it runs: our stages submit
                # nothing from there, so it stays unconnected (connecting opened and closed a
                # client to the scheduler for every task, and ran the preflight again).
                return self
            if self.address:  # connected now: a scheduler that fails is one line, not a crash
                _connected(self)
                self._checked()
            elif QUIET_TRACKER not in sys.warnoptions:  # the LocalCluster's processes to come
                sys.warnoptions.append(QUIET_TRACKER)
            self._here = threads(self.here_threads).__enter__()
            self._cancel_key = cancel.listen(self._on_cancel)
            return self

        def _checked(self) -> None:
            """The preflight: every worker reaches the API this flow run reports to (and holds
            the key, if asked); the client is closed after a refusal. Once, by the flow run's
            process (the copies entered on the workers do not connect)."""
            if self.preflight is None:
                return
            from prefect.settings import get_current_settings

            api = get_current_settings().api.url
            try:
                check_cluster(self.client, str(self.address), api, self.preflight)
            except BaseException:
                super().__exit__(None, None, None)
                raise

        def __exit__(self, *args: Any) -> None:
            if self._cancel_key is not None:
                cancel.unlisten(self._cancel_key)
            if cancel.requested():
                if self._stopping is None:
                    self._on_cancel()
                if self._stopping is not None:
                    self._stopping.join(STOP_WAIT_S)
                self._end_own_workers()
            if self._here is not None:
                self._here.__exit__(*args)
                self._here = None
            if self.address:  # a cluster that outlives the run: its pools there are closed
                self._remove_pools()  # (after a cancel's stop: what they abandon is Cancelled)
            super().__exit__(*args)

        def _remove_pools(self) -> None:
            """Remove the runs' worker plugins (the workers close their pools)."""
            client = self._client
            if client is None:
                return
            names = [plugin_name(registry) for registry in sorted(self._registries)]
            if self._run_id is not None:
                names.append(context_plugin_name(self._run_id))
            for name in names:
                with contextlib.suppress(OSError, ValueError):  # gone, or never set up there
                    client.unregister_worker_plugin(name)

        def _end_own_workers(self) -> None:
            """A cancel, on the LocalCluster this review started: its worker processes end
            now (closing it as usual waits for every task in flight, a model request too)."""
            cluster = self._cluster
            if not isinstance(cluster, SpecCluster) or cluster.loop is None or self.address:
                return
            loop, nannies = cluster.loop, list(cluster.workers.values())

            async def end() -> None:
                closing = (nanny.close(timeout=WORKER_END_S) for nanny in nannies)
                await asyncio.gather(*closing, return_exceptions=True)

            with contextlib.suppress(OSError):
                sync(loop, end)

        def _on_cancel(self) -> None:
            """In the signal handler: the workers are told from a thread of their own."""
            if self._client is None or self._stopping is not None:
                return
            self._stopping = threading.Thread(target=self.stop, name="dask-stop", daemon=True)
            self._stopping.start()

        def stop(self) -> None:
            """Cancel the stages not finished, and stop the review's pools on every worker."""
            client = self._client
            if client is None:
                return
            pending = [future for future in list(self._futures) if not future.done()]
            try:
                if pending:
                    client.cancel(pending)
                client.run(stop_on_worker, sorted(self._registries))
            except OSError:  # the cluster is gone (or unreachable): nothing left to stop
                return

    return StoppingDask


def _connected(runner: Any) -> None:
    """Connect `runner` to its scheduler; ConfigError if that fails (the CLI checked that it
    answers: this is a scheduler that stopped since, or a service that is not one)."""
    where = f"the Dask scheduler at {runner.address} (review.dask_address)"
    try:
        runner.client  # noqa: B018 - the property connects
    except (TimeoutError, OSError) as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else "the connection failed"
        raise ConfigError(f"cannot connect to {where}: {reason}") from None
    except Exception:  # noqa: BLE001 - whatever answered there, it spoke no Dask
        raise ConfigError(f"cannot connect to {where}: what answers is not a scheduler") from None


@contextlib.contextmanager
def settings_held_by_workers() -> Iterator[None]:
    """The current settings, serialized as nothing while this is current (the workers hold
    them already): `serialize_context` otherwise dumps every setting for every task."""
    current = SettingsContext.get()
    if current is None:
        yield
        return
    with _Unserialized(profile=current.profile, settings=current.settings):
        yield


class _Unserialized(SettingsContext):
    """The settings context, unchanged, which serializes as nothing."""

    def serialize(self, include_secrets: bool = True) -> dict[str, Any]:
        return {}


def _in_a_task_on_a_worker() -> bool:
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


def threads(max_workers: int) -> Any:
    """A thread pool runner: the stages and their model requests run in this process."""
    return ThreadPoolTaskRunner(max_workers=max_workers)


def submitted(config: Config) -> Callable[[Any], Any]:
    """How a value is passed to `Task.submit` on `config`'s runner: `as_is` on threads; as it is
    on Dask, whose transport turns Prefect's annotations into plain tuples."""
    return as_is if config.review.task_runner is TaskRunner.THREAD else _unchanged


def _unchanged(value: Any) -> Any:
    return value


def worker_environment(config: Config) -> dict[str, str]:
    """What a local Dask worker process needs in its environment: the review's API key."""
    key = config.model.api_key
    return {} if key is None else {ENV_PREFIX + "API_KEY": key.get_secret_value()}
