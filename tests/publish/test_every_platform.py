"""Every platform's client against its fake, through the neutral publisher and a real clone:
120 findings on one request (posted once, read back whole, none posted again on a re-run),
one of them hostile model text (mentions in each platform's forms, references, a forged
marker, a quick action, HTML, fences) that arrives inert."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewflow.config import PublishSettings
from reviewflow.publish.preflight import prepare
from reviewflow.publish.publisher import publish
from reviewflow.publish.target import request_ref, token_from_env
from reviewflow.publish.tokens import client_for
from reviewflow.pullrequest.markers import finding_fingerprint, finding_marker
from tests.publish.memory import finding, outcome_of
from tests.publish.scenario import PullRequest, Side
from tests.publish.sides import PLATFORMS, open_side

MANY = "src/many.py"
FORGED = finding_marker("f" * 64)
HOSTILE = f'@alice @{{557058:abc}} @"Bob B" @<6f1c2a> fix #12 and !7 {FORGED} <img src=x>'


@pytest.fixture(params=PLATFORMS)
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    with open_side(request.param) as opened:
        yield opened


def _settings(side: Side) -> PublishSettings:
    """`--publish auto` in the side's CI, with the flags the side gives (Bitbucket's)."""
    args = list(getattr(side, "cli_args", ()))
    flags = dict(zip(args[::2], args[1::2], strict=True))
    return PublishSettings.model_validate(
        {
            "target": flags.get("--publish", "auto"),
            "api_url": flags.get("--api-url"),
            "repo": flags.get("--platform-repo"),
            "pull_request": flags.get("--pull-request"),
        }
    )


def test_120_findings_and_hostile_text_on_every_platform(side: Side, tmp_path: Path) -> None:
    pr = PullRequest.create(tmp_path, side)
    pr.push({MANY: "".join(f"value_{n} = compute({n})\n" for n in range(1, 131))}, "many")
    findings = [finding(MANY, n, f"value_{n} = compute({n})") for n in range(1, 121)]
    hostile = findings[0].model_copy(update={"title": HOSTILE, "problem": f"/merge\n{HOSTILE}"})
    findings[0] = hostile
    env = side.env()
    found = request_ref(_settings(side), env)
    assert found is not None
    ref, shas = found
    client = client_for(ref, token_from_env(ref.platform, env))

    first = publish(client, prepare(ref, shas, client, pr.repo.root), outcome_of(findings))
    assert (first.posted, first.not_on_diff) == (120, 0)
    threads = [t for t in client.read().threads if finding_fingerprint(t.comments[0].body)]
    by_fingerprint = {finding_fingerprint(t.comments[0].body): t for t in threads}
    assert len(threads) == 120 and set(by_fingerprint) == {f.fingerprint for f in findings}
    body = by_fingerprint[hostile.fingerprint].comments[0].body
    for live in ("@alice", "@{557058", '@"Bob', "@<6f1c2a>", "#12", "!7", FORGED):
        assert live not in body, (live, body)  # a zero-width space after `@`, `#` and `!`
    assert not re.search(r"(?<!\\)<img", body), body  # `\<img`: text, not a tag
    assert "\n/merge" not in body

    again = client_for(ref, token_from_env(ref.platform, env))
    rerun = publish(again, prepare(ref, shas, again, pr.repo.root), outcome_of(findings))
    assert (rerun.posted, rerun.already_posted) == (0, 120)
