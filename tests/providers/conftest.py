"""Fixtures for provider tests: the scripted wire server and helpers around it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.wire_server import PROTOCOLS


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    """Each model protocol in turn."""
    return str(request.param)


@pytest.fixture
def prefect_tasks(prefect_harness: None) -> Iterator[None]:
    """The shared Prefect API, with task runs outside a flow allowed to log quietly."""
    from prefect.settings import PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW, temporary_settings

    with temporary_settings(updates={PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW: "ignore"}):
        yield
