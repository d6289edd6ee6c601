"""Fixtures of the report tests (the outcomes themselves are in samples.py)."""

from __future__ import annotations

import pytest

from reviewflow.report.outcome import ReviewOutcome
from tests.report.samples import OUTCOMES


@pytest.fixture(params=sorted(OUTCOMES))
def any_outcome(request: pytest.FixtureRequest) -> ReviewOutcome:
    return OUTCOMES[request.param]()
