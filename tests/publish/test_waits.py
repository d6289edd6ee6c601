"""The wait every platform client names in a rate limit's TransientPublishError."""

from __future__ import annotations

import pytest

from reviewflow.publish.waits import retry_wait

NOW = 1767225600.0  # Thu, 01 Jan 2026 00:00:00 GMT


@pytest.mark.parametrize(
    ("headers", "reset", "wait"),
    [
        ({"Retry-After": "30"}, None, 30.0),
        ({"Retry-After": "Thu, 01 Jan 2026 00:01:00 GMT"}, None, 60.0),  # an HTTP date
        ({"RateLimit-Reset": str(NOW + 45)}, "RateLimit-Reset", 45.0),  # GitLab's epoch
        ({"X-RateLimit-Reset": str(NOW + 20)}, "X-RateLimit-Reset", 20.0),  # Azure DevOps'
        ({"Retry-After": "5", "RateLimit-Reset": str(NOW + 45)}, "RateLimit-Reset", 5.0),
        ({"RateLimit-Reset": str(NOW + 45)}, None, 60.0),  # a platform that names no reset
        ({}, None, 60.0),
        ({}, "RateLimit-Reset", 60.0),
        ({"Retry-After": "soon"}, None, 60.0),
        ({"Retry-After": "nan"}, None, 60.0),
        ({"Retry-After": "0"}, None, 1.0),  # at least a second
        ({"Retry-After": "86400"}, None, 900.0),  # at most 15 minutes
    ],
)
def test_the_wait_comes_from_retry_after_then_the_reset_then_a_minute(
    headers: dict[str, str], reset: str | None, wait: float
) -> None:
    assert retry_wait(headers, NOW, reset) == wait
