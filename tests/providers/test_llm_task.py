"""One model request (`tasks.llm.llm_request`, sent inside its stage's task run): one retry on
transient errors, none on permanent ones, every attempt counted (in the response or the final
error), and the API key nowhere Prefect writes when the stage's task run fails with it."""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from reviewflow.config import ModelSettings
from reviewflow.errors import ProviderError, TransientProviderError
from reviewflow.providers import ModelRequest, ModelResponse, ProviderPool, UserMessage
from reviewflow.providers.failures import ProviderAuthError, UnsendableRequestError, attempts_of
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.recording import failure_status
from tasks.llm import (
    RETRIES,
    RETRY_DELAY_SECONDS,
    llm_request,
    request_model,
    retry_transient,
    sender,
)
from tests.wire_server import TEST_KEY, Delay, HttpError, Text, WireServer

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

REQUEST = ModelRequest(system="sys", messages=(UserMessage(content="hi"),))


def fast_llm_request(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    return llm_request(handle, request, delay=0)


SCENARIOS: dict[str, tuple[list[Any], int, type[Exception] | None]] = {
    "429-then-200": ([HttpError(429), Text("ok")], 2, None),
    "500-twice": ([HttpError(500), HttpError(500)], 2, TransientProviderError),
    "401": ([HttpError(401), Text("never")], 1, ProviderAuthError),
    "timeout-then-200": ([Delay(5), Text("ok")], 2, None),
}


def test_the_request_declares_its_policy() -> None:
    """One retry after 2 s, transient failures only; a request is no task run of its own (four
    of a file's seven task runs were, and the Prefect database grew past its bound)."""
    from prefect import Task

    assert (RETRIES, RETRY_DELAY_SECONDS) == (1, 2.0)
    assert retry_transient(TransientProviderError("429")) and not retry_transient(
        ProviderAuthError("401")
    )
    assert not isinstance(llm_request, Task)


def test_plain_function_needs_no_prefect(wire: WireServer) -> None:
    wire.script("openai", [Text("plain"), HttpError(429)])
    with ProviderPool(wire.settings("openai"), 1) as pool:
        response = llm_request(pool.handle, REQUEST)
        assert response.text == "plain" and response.attempts == 1
        with pytest.raises(TransientProviderError):  # no Prefect, no retry
            request_model(pool.handle, REQUEST)
    assert pool.meter.totals().requests == 2
    wire.assert_done()


def test_a_request_that_never_left_counts_no_attempt() -> None:
    """Issue 37 item 1: a request that could not be built reached no server: no attempt."""
    settings = ModelSettings.model_construct(  # an endpoint the config would refuse
        protocol="openai", name="m", endpoint="http://[::1/v1", timeout=2.0, api_key=SecretStr("k")
    )
    with ProviderPool(settings, 1) as pool, pytest.raises(UnsendableRequestError) as caught:
        llm_request(pool.handle, REQUEST)
    assert attempts_of(caught.value) == 0
    assert failure_status(caught.value) == {"attempts": 0, "status": "error"}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_retries_inside_the_stage_s_task_run(
    prefect_tasks: None, wire: WireServer, protocol: str, scenario: str
) -> None:
    replies, expected_requests, error = SCENARIOS[scenario]
    wire.script(protocol, replies)
    from prefect import task

    @task(name="stage", retries=0)
    def stage(handle: ProviderHandle) -> ModelResponse:
        return fast_llm_request(handle, REQUEST)

    with ProviderPool(wire.settings(protocol, timeout=0.4), 2) as pool:
        if error is None:
            response = stage(pool.handle)
            assert response.text == "ok"
            assert response.attempts == expected_requests  # counted wherever the stage ran
        else:
            with pytest.raises(error) as caught:
                stage(pool.handle)
            assert TEST_KEY not in "".join(traceback.format_exception(caught.value))
            assert attempts_of(caught.value) == expected_requests
    assert len(wire.requests(protocol)) == expected_requests
    assert pool.meter.totals().requests == expected_requests


def _scan(paths: list[Path], secret: bytes) -> list[Path]:
    hits = []
    for root in paths:
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        hits += [f for f in files if secret in f.read_bytes()]
    return hits


def test_api_key_never_reaches_logs_database_or_results(
    prefect_harness: None,
    prefect_api_home: Path,
    wire: WireServer,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from prefect import flow, task
    from prefect.artifacts import create_markdown_artifact
    from prefect.logging.loggers import get_run_logger
    from prefect.settings import PREFECT_HOME, PREFECT_LOCAL_STORAGE_PATH

    from flows.local.process import DATABASE_FILE
    from flows.local.settings import prefect_home

    @task(name="stage", retries=0)
    def stage(handle: ProviderHandle) -> ModelResponse:  # a stage whose request fails, or not
        return fast_llm_request(handle, REQUEST)

    @flow(name="key-scan", persist_result=True)
    def key_scan(handle: ProviderHandle) -> str:
        failed = stage(handle, return_state=True)
        error = failed.result(raise_on_failure=False)
        assert isinstance(error, ProviderError)
        answer: ModelResponse = stage(handle)
        get_run_logger().info("first: %s; then: %s", error, answer.text)
        create_markdown_artifact(f"{error}\n\n{answer.text}", key="key-scan")
        return f"{error!r} {answer!r}"

    for name in (None, "prefect", "openai", "anthropic", "google_genai", "httpx", "httpx2"):
        caplog.set_level(logging.DEBUG, logger=name)
    wire.script("anthropic", [HttpError(401), Text("fine")])
    with ProviderPool(wire.settings("anthropic"), 2) as pool:
        state = key_scan(pool.handle, return_state=True)
        summary = state.result()
    assert state.is_completed()
    assert [r.credential for r in wire.requests("anthropic")] == [TEST_KEY, TEST_KEY]
    assert "[REDACTED]" in summary and TEST_KEY not in summary

    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all()
    out, err = capfd.readouterr()
    assert TEST_KEY not in out + err
    assert TEST_KEY not in caplog.text
    assert all(TEST_KEY not in str(r.__dict__) for r in caplog.records)
    database = prefect_home(prefect_api_home) / DATABASE_FILE  # the test API's server
    roots = [PREFECT_HOME.value(), PREFECT_LOCAL_STORAGE_PATH.value(), database.parent]
    roots = [Path(r) for r in roots if Path(r).exists()]
    assert database.exists() and database.stat().st_size > 0
    assert _scan(roots, TEST_KEY.encode()) == []
    assert os.environ.get("ANTHROPIC_API_KEY") is None  # the key only ever lived in the pool


class _Seen:
    """A progress display that records what it is told."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def request_done(self, usage: object, model: str) -> None:
        self.events.append("request")

    def file_started(self, path: str) -> None:
        self.events.append(f"started {path}")

    def file_done(self, path: str) -> None:
        self.events.append(f"done {path}")


def test_a_stage_sender_tells_the_progress_display_its_file_is_in_progress(
    prefect_tasks: None, wire: WireServer
) -> None:
    wire.script("openai", [Text("one"), Text("two")])
    seen = _Seen()
    with ProviderPool(wire.settings("openai"), 1, observer=seen) as pool:
        send = sender(pool.handle, "app/a.py")
        assert [send(REQUEST).text, send(REQUEST).text] == ["one", "two"]
        sender(pool.handle)  # a stage of no one file (localization) names none
    assert seen.events == ["started app/a.py", "request"] * 2
