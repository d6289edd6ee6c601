"""More open findings than the summary's state holds (`MAX_REMEMBERED`, 400): incremental runs
carry every one of them to the gate, read from the platform's own threads, run after run —
through the GitLab and Azure DevOps clients and fakes and a real clone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewflow.config import PublishSettings
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.preflight import prepare
from reviewflow.publish.publisher import publish
from reviewflow.publish.target import request_ref, token_from_env
from reviewflow.publish.tokens import client_for
from reviewflow.pullrequest.context import PullRequestContext, ReviewScope, prior_state
from reviewflow.pullrequest.state import MAX_REMEMBERED
from reviewflow.report.assemble import pull_request_report
from tests.publish.memory import finding, outcome_of
from tests.publish.scenario import PullRequest, Side
from tests.publish.sides import open_side

MANY = "src/many.py"
COUNT = MAX_REMEMBERED + 50


@pytest.fixture(params=["gitlab", "azure"])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    with open_side(request.param) as opened:
        yield opened


def _prepared(pr: PullRequest) -> tuple[PlatformClient, PullRequestContext]:
    """The request as the side's CI names it now, read through a new client."""
    env = pr.side.env()
    found = request_ref(PublishSettings.model_validate({"target": "auto"}), env)
    assert found is not None
    ref, shas = found
    client = client_for(ref, token_from_env(ref.platform, env))
    return client, prepare(ref, shas, client, pr.repo.root)


def test_incremental_runs_carry_every_open_finding_past_the_state_cap(
    side: Side, tmp_path: Path
) -> None:
    pr = PullRequest.create(tmp_path, side)
    lines = "".join(f"value_{n} = compute({n})\n" for n in range(1, COUNT + 11))
    pr.push({MANY: lines}, "many")
    findings = [finding(MANY, n, f"value_{n} = compute({n})") for n in range(1, COUNT + 1)]
    every = {f.fingerprint for f in findings}
    client, context = _prepared(pr)
    assert publish(client, context, outcome_of(findings)).posted == COUNT
    state = prior_state(client.read())
    assert state is not None and len(state.findings) == MAX_REMEMBERED  # the state's cap

    for turn in range(2):  # two pushes that leave the findings' lines alone
        pr.push({f"src/other{turn}.py": f"x = {turn}\n"}, f"other {turn}")
        client, context = _prepared(pr)
        assert context.scope is ReviewScope.INCREMENTAL
        report = pull_request_report(context, [])  # what the gate counts beside this run's
        assert report is not None and {f.fingerprint for f in report.carried} == every
        assert all(f.severity.value == "high" for f in report.carried)
        run = publish(client, context, outcome_of([]).model_copy(update={"files": ()}))
        assert (run.posted, run.resolved, run.open) == (0, 0, COUNT)
        [summary] = [n.body for n in client.read().notes if "reviewflow:summary" in n.body]
        assert f"high {COUNT}" in summary
