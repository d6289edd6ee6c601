"""Fixtures for provider tests: the scripted wire server and helpers around it."""

from __future__ import annotations

import pytest

from tests.wire_server import PROTOCOLS


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    """Each model protocol in turn."""
    return str(request.param)
