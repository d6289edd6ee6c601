"""A review's second model (`review.verify_model`): its own model name on the wire, the same
pool's slots, meter and lifetime."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewflow.providers import ModelRequest, ProviderPool, UserMessage, pool_for
from reviewflow.providers.pool import PoolClosedError
from tests.wire_server import Delay, Text, WireServer

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


def test_the_verify_model_shares_the_review_pool(wire: WireServer) -> None:
    wire.script("anthropic", [Delay(0.2, Text()) for _ in range(4)])
    pool = ProviderPool(wire.settings("anthropic", name="reviewer"), 2)
    verifier = pool.for_model("verifier")
    assert pool.for_model("verifier") == verifier and pool.for_model("reviewer") == pool.handle
    assert verifier.model == "verifier" and verifier.pool_id != pool.handle.pool_id
    assert verifier.cache_identity() == {**pool.handle.cache_identity(), "model": "verifier"}
    handles = [pool.handle, verifier, verifier, pool.handle]
    with ThreadPoolExecutor(max_workers=4) as threads:
        sent = threads.map(
            lambda handle: pool_for(handle, pool.registry).complete(REQUEST), handles
        )
        list(sent)  # (threads of our own: the run's registry is handed, not in their context)
    assert [r.model for r in wire.requests()].count("verifier") == 2
    assert wire.max_in_flight == 2  # review.concurrency covers both models
    assert pool.meter.totals().requests == 4  # one meter: the review's usage
    pool.close()
    with pytest.raises(PoolClosedError):
        pool_for(verifier).complete(REQUEST)


def test_a_pass_model_of_another_protocol_takes_its_own_key(wire: WireServer) -> None:
    """`review.pass_models`: the same protocol uses the review's key (a CLI run has removed the
    key variables by then), another takes its protocol's key variable; one meter for all."""
    wire.script("anthropic", [Text()])
    wire.script("openai", [Text(), Text()])
    pool = ProviderPool(wire.settings("anthropic", name="reviewer"), 2)
    same = wire.settings("anthropic", name="second").model_copy(update={"api_key": None})
    other = wire.settings("openai", name="third").model_copy(update={"api_key": None})
    env = {"OPENAI_API_KEY": "sk-openai-pass"}
    handles = [pool.for_settings(same, env), pool.for_settings(other, env)]
    assert pool.for_settings(other, env) == handles[1]  # one sibling per model
    for handle in [*handles, handles[1]]:
        pool_for(handle, pool.registry).complete(REQUEST)
    sent = {(r.model, r.credential) for r in wire.requests()}
    review_key = wire.settings("anthropic").api_key
    assert review_key is not None
    assert sent == {("second", review_key.get_secret_value()), ("third", "sk-openai-pass")}
    assert pool.meter.totals().requests == 3
    pool.close()
