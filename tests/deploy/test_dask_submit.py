"""What the review's Dask runner sends for a stage, and what a worker runs it in, without a
cluster: the settings serialize as nothing per task (they travel once, in the run's worker plugin,
`flows.dask_worker`), and the plugin, as a worker unpickles it, builds the run's settings and one
API client once; every task on the worker runs in them, from any of its threads, and the client
is closed when the run removes the plugin. The stages on real workers, recorded as task runs:
`test_dask_isolated.py` and `test_dask_cluster.py` (stress)."""

from __future__ import annotations

import threading
from typing import Any
from uuid import uuid4

import pytest
from distributed.protocol.pickle import dumps, loads
from prefect import task
from prefect.client.orchestration import get_client
from prefect.context import SettingsContext, serialize_context
from prefect.settings import PREFECT_API_URL, get_current_settings

from flows.dask_worker import run_context_plugin, run_in
from flows.runners import settings_held_by_workers

pytestmark = pytest.mark.usefixtures("prefect_harness")


@task(persist_result=False)
def where_it_ran(value: int) -> tuple[int, int, str]:
    """The client and settings a task run sees, by identity, and its API URL."""
    client = get_client(sync_client=True)
    return value, id(client), str(get_current_settings().api.url)


def test_a_stages_context_carries_no_settings() -> None:
    current = SettingsContext.get()
    assert current is not None
    assert serialize_context()["settings_context"]["settings"]  # Prefect's own: every setting
    with settings_held_by_workers():
        held = SettingsContext.get()
        assert held is not None and held.settings is current.settings  # unchanged here
        context = serialize_context()
    assert context["settings_context"] == {}
    assert SettingsContext.get() is current


@pytest.mark.usefixtures("prefect_tasks")
def test_the_run_plugin_builds_its_settings_and_client_once_for_every_task() -> None:
    current = SettingsContext.get()
    assert current is not None
    api = PREFECT_API_URL.value()
    plugin = run_context_plugin()(uuid4().hex, current.serialize(), {})
    plugin = loads(dumps(plugin))  # as Dask hands it to a worker
    with settings_held_by_workers():
        context = serialize_context()
    ran: list[Any] = []

    def stage(value: int) -> None:
        state = run_in(plugin, where_it_ran, uuid4(), {"value": value}, {"value": set()}, context)
        ran.append(state.result())

    threads = [threading.Thread(target=stage, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(value for value, _, _ in ran) == [0, 1, 2, 3]
    assert len({client for _, client, _ in ran}) == 1  # one client for every task
    assert {url for _, _, url in ran} == {api}  # the run's API, from the settings it was sent
    with plugin.entered():
        client = get_client(sync_client=True)
        assert id(client) == ran[0][1]
        assert client.api_healthcheck() is None  # still open after every task ended
        plugin.teardown(None)  # the run ends while a stage is still in its client
        assert client.api_healthcheck() is None  # open until that stage leaves
    assert isinstance(client.api_healthcheck(), Exception)  # then closed
