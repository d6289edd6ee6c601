"""The platform fakes held to their platforms' official API descriptions (`spec_check.py`): a
pull request's life published to each (findings posted, posted again to no effect, one fixed
and its thread resolved, one dismissed and one resolved by people) uses only operations the
spec has, sends only what they take and gets only answers their schemas allow; and the check
finds an invented field, a wrong type, an unknown route and an unknown query parameter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from reviewflow.config import PublishSettings
from reviewflow.findings.models import Finding
from reviewflow.publish.azure_devops.client import AzureDevOpsClient
from reviewflow.publish.preflight import prepare
from reviewflow.publish.publisher import publish
from reviewflow.publish.target import request_ref, token_from_env
from reviewflow.publish.tokens import client_for
from tests.publish import fake_azure_devops, fake_gitea
from tests.publish.fake_http import PlatformFake
from tests.publish.memory import finding, outcome_of
from tests.publish.scenario import PullRequest, Side
from tests.publish.sides import open_side
from tests.publish.spec_check import Spec, azure_devops, gitea, spec_violations

APP = "src/app.py"
CODE = "".join(f"value_{n} = compute({n})\n" for n in range(1, 13))
SPECS: dict[str, tuple[str, Callable[[], Spec], tuple[str, ...]]] = {
    # key: (side, spec, the fake's request kinds the life must use)
    "gitea": ("gitea", gitea, fake_gitea.KINDS),
    "forgejo": ("gitea", gitea, fake_gitea.KINDS),
    "azure": ("azure", azure_devops, fake_azure_devops.KINDS),
}


@pytest.fixture(params=list(SPECS))
def checked(request: pytest.FixtureRequest) -> Iterator[tuple[Side, Spec, tuple[str, ...]]]:
    name, spec, kinds = SPECS[request.param]
    with open_side(name) as side:
        if request.param == "forgejo":
            _fake(side).forgejo()  # type: ignore[attr-defined]
        yield side, spec(), kinds


def _fake(side: Side) -> PlatformFake:
    fake: PlatformFake = side.fake  # type: ignore[attr-defined]
    return fake


def _publish(side: Side, pr: PullRequest, findings: list[Finding]) -> None:
    env = side.env()
    found = request_ref(PublishSettings.model_validate({"target": "auto"}), env)
    assert found is not None
    ref, shas = found
    client = client_for(ref, token_from_env(ref.platform, env))
    publish(client, prepare(ref, shas, client, pr.repo.root), outcome_of(findings))


def test_a_pull_requests_life_stays_inside_the_platforms_spec(
    checked: tuple[Side, Spec, tuple[str, ...]], tmp_path: Path
) -> None:
    side, spec, kinds = checked
    pr = PullRequest.create(tmp_path, side)
    pr.push({APP: CODE}, "code")
    findings = [finding(APP, n, f"value_{n} = compute({n})", title=f"t{n}") for n in (2, 5, 8)]
    _publish(side, pr, findings)
    _publish(side, pr, findings)
    pr.push({APP: CODE.replace("compute(2)", "compute(2) or 0")}, "fix 2")
    _publish(side, pr, findings[1:])  # the first fixed: its thread resolved
    fixed, dismissed, resolved = sorted(side.posted(), key=lambda p: int(p.id.split(":")[0]))
    assert fixed.replies and not dismissed.replies and not resolved.resolved  # Forgejo: a reply
    side.dismiss(dismissed.id, "reviewflow: dismiss false alarm")
    side.resolve(resolved.id)
    _publish(side, pr, findings[1:])

    fake = _fake(side)
    used = {exchange.request.kind for exchange in fake.exchanges}
    assert set(kinds) <= used, set(kinds) - used
    assert spec_violations(fake, spec) == []


def test_the_check_finds_what_gitea_does_not_do() -> None:
    with fake_gitea.FakeGitea() as gt:
        pull = gt.add_pull("acme/app", 7, head_sha="h" * 40, base_sha="b" * 40)
        gt.create_review(pull, "carol", {"event": "COMMENT", "body": "fine"})
        pull.reviews[0].update({"id": "one", "verdict": "fine"})  # a wrong type, a made-up field
        headers = {"Authorization": f"token {fake_gitea.TOKEN}"}
        reviews = f"{gt.api_url}/repos/acme/app/pulls/7/reviews"
        httpx.get(reviews, params={"per_page": 5}, headers=headers)
        httpx.get(f"{gt.api_url}/repos/acme/app/pulls/7/reviews/9/verdicts", headers=headers)
        found = spec_violations(gt, gitea())
    route = "GET /repos/{owner}/{repo}/pulls/{index}/reviews"
    assert found == [
        f"{route}: the client sent query parameter 'per_page' the operation does not take",
        f"{route}: answer at 0/id: 'one' is not of type 'integer'",
        f"{route}: answer has field /0/verdict the schema does not name",
        "GET /api/v1/repos/acme/app/pulls/7/reviews/9/verdicts: no such operation in Gitea's spec",
    ]


def test_the_check_finds_what_azure_devops_does_not_do() -> None:
    with fake_azure_devops.FakeAzureDevOps() as ado:
        ado.add_pull_request(
            "Fabrikam", "app", 7, head="h" * 40, base="b" * 40, changed={APP: "edit"}
        )
        ado.system_thread(7, "a policy")
        ado.pull(7).threads[0].update({"status": 7, "verdict": "fine"})
        AzureDevOpsClient(ado.ref("Fabrikam/app", 7), fake_azure_devops.TOKEN, 5.0).read()
        found = spec_violations(ado, azure_devops())
    route = "GET /{organization}/{project}/_apis/git/repositories/{repositoryId}/pullRequests"
    statuses = azure_devops().document["definitions"]["CommentThread"]["properties"]["status"]
    statuses = statuses["enum"]
    assert found == [
        f"{route}/{{pullRequestId}}/threads: answer at 0/status: 7 is not one of {statuses}",
        f"{route}/{{pullRequestId}}/threads: answer has field /0/verdict the schema does not name",
    ]
