"""The per-review pool: bounded requests in flight, every attempt metered, key-free handles."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewflow.config import Config, ReviewSettings
from reviewflow.errors import PermanentProviderError
from reviewflow.providers import ModelRequest, ProviderPool, UserMessage, pool_for
from tests.wire_server import TEST_KEY, Delay, HttpError, Text, WireServer, WireUsage

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_requests_in_flight(wire: WireServer, concurrency: int) -> None:
    wire.script("openai", [Delay(0.25) for _ in range(6)])
    review = ReviewSettings.model_validate({"concurrency": concurrency})
    config = Config(model=wire.settings("openai"), review=review)
    with ProviderPool.from_config(config) as pool, ThreadPoolExecutor(max_workers=6) as threads:
        list(threads.map(lambda _: pool.complete(REQUEST), range(6)))
    assert wire.max_in_flight == concurrency
    assert pool.meter.totals().requests == 6


def test_meter_counts_failed_attempts_and_sums_usage(wire: WireServer) -> None:
    usage = WireUsage(prompt=10, completion=2, cache_read=4)
    wire.script("anthropic", [Text(usage=usage), HttpError(400), Text(usage=usage)])
    with ProviderPool(wire.settings("anthropic"), 2) as pool:
        pool.complete(REQUEST)
        with pytest.raises(PermanentProviderError):
            pool.complete(REQUEST)
        pool.complete(REQUEST)
    totals = pool.meter.totals()
    assert totals.requests == 3
    assert (totals.prompt_tokens, totals.completion_tokens, totals.cache_read_tokens) == (28, 4, 8)
    assert totals.total_tokens == 32


def test_handle_holds_no_key_and_is_resolved_in_process(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.script("gemini", [Text(), Text()])
    pool = ProviderPool(wire.settings("gemini"), 2)
    handle = pool.handle
    assert TEST_KEY not in handle.model_dump_json() and TEST_KEY not in repr(handle)
    assert pool_for(handle) is pool
    pool_for(handle).complete(REQUEST)
    pool.close()

    # Another process (or a closed pool): the key comes from this process's environment.
    monkeypatch.setenv("GEMINI_API_KEY", TEST_KEY)
    rebuilt = pool_for(handle)
    assert rebuilt is not pool and rebuilt.id == handle.pool_id
    rebuilt.complete(REQUEST)
    rebuilt.close()
    assert [r.credential for r in wire.requests("gemini")] == [TEST_KEY, TEST_KEY]
