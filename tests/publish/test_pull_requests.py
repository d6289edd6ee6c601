"""A pull/merge request's life through the CLI and the `ci-review` deployment, published to
every platform's fake (`sides.py`): a first run, a re-run, a push that fixes one finding, a
dismissal and a force-push, each run's exit code and report, and no token anywhere afterwards."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.blocks.system import Secret

from flows.cli.main import main
from flows.deployed import ci_review, deployed_config, publish_token
from reviewflow.errors import ConfigError
from reviewflow.publish.platforms import TOKEN_ENV_VARS
from reviewflow.pullrequest.markers import RESOLVED, summary_state
from reviewflow.report.gate import summary_key
from tests.deploy.readback import artifacts
from tests.flows.reviewer import ScriptedReviewer
from tests.publish.scenario import (
    EXTRA,
    FIXED,
    LEAK,
    MUTATES,
    NUMBER,
    PROJECT,
    SPLIT,
    PullRequest,
    Side,
    use_env,
)
from tests.publish.sides import PLATFORMS, open_side
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")
_RUNS = itertools.count()


ENTRIES = ("cli", "deployment")
# Every platform through one entry, the entries in turn (each platform's client and CI
# detection, both entries' own code); every other pair in the stress matrix (`make test-stress`).
CASES = [
    (platform, entry)
    if i == n % len(ENTRIES)
    else pytest.param(platform, entry, marks=pytest.mark.stress)
    for n, platform in enumerate(PLATFORMS)
    for i, entry in enumerate(ENTRIES)
]


@pytest.fixture
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    with open_side(request.param) as opened:
        yield opened


def _cli(
    pr: PullRequest, monkeypatch: pytest.MonkeyPatch, wire: WireServer
) -> tuple[int, dict[str, Any]]:
    out = pr.repo.root.parent / f"out{next(_RUNS)}"
    use_env(monkeypatch, wire, pr.side.env())
    args = ["review", "--repo", str(pr.repo.root), "--publish", "auto", "--report-dir", str(out)]
    args += getattr(pr.side, "cli_args", ())  # a CI that names no API URL: the fake's
    code = main([*args, "--console", "summary", "--no-progress"])
    return code, json.loads((out / "review-report.json").read_text())


def _deployed(
    pr: PullRequest, monkeypatch: pytest.MonkeyPatch, wire: WireServer, block: str | None = None
) -> tuple[int, dict[str, Any]]:
    """A `ci-review` run with the token in the worker's environment, or (`block`) only in that
    Prefect Secret block."""
    out = pr.repo.root.parent / f"out{next(_RUNS)}"
    env = pr.side.env()
    token = {k: v for k, v in env.items() if k in TOKEN_ENV_VARS}  # the worker's: no CI there
    use_env(monkeypatch, wire, {} if block else token)
    api = (
        env.get("GITHUB_API_URL")
        or env.get("CI_API_V4_URL")
        or env.get("SYSTEM_COLLECTIONURI")
        or pr.side.api_url
    )
    state = ci_review(
        pr.bare.as_uri(),
        platform=pr.side.name,  # type: ignore[arg-type]
        platform_repo=PROJECT,
        pull_request=NUMBER,
        overrides={
            "publish": {"api_url": api, **({"token_block": block} if block else {})},
            "output": {"report_dir": str(out)},
        },
        return_state=True,
    )
    report = json.loads((out / "review-report.json").read_text())
    assert state.is_completed() == (report["exit_code"] == 0)
    [summary] = artifacts(state.state_details.flow_run_id)[summary_key(pr.bare.as_uri())]
    assert summary["pull_request"] == report["pull_request"]["url"]  # the artifact links to it
    assert f"/flow-run/{state.state_details.flow_run_id}" in pr.side.summaries()[0]  # and back
    return report["exit_code"], report


@pytest.mark.parametrize(("side", "entry"), CASES, indirect=["side"])
def test_a_request_reviewed_push_after_push_is_never_commented_twice(
    entry: str,
    side: Side,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    prefect_api_home: Path,
) -> None:
    review = _cli if entry == "cli" else _deployed
    pr = PullRequest.create(tmp_path, side)

    # 1. The first run posts each finding and one summary; the gate fails on the high ones.
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
    code, report = review(pr, monkeypatch, wire)
    assert code == 1 and len(report["findings"]) == 2
    assert report["pull_request"]["scope"] == "full"
    posted = {p.fingerprint: p for p in side.posted()}
    assert set(posted) == {f["fingerprint"] for f in report["findings"]}
    [summary] = side.summaries()
    assert "gate failed" in summary and "high 2" in summary
    requests = len(wire.requests())

    # 2. The same head again: nothing to review, nothing posted, the summary edited in place.
    code, report = review(pr, monkeypatch, wire)
    assert code == 1  # the request's open high findings still fail it
    assert len(wire.requests()) == requests and report["pull_request"]["scope"] == "incremental"
    assert len(report["pull_request"]["carried"]) == 2 and len(side.posted()) == 2
    assert len(side.summaries()) == 1

    # 3. A push fixes the split and adds a file: its finding posted, the split's thread resolved.
    pr.push({"app/settings.py": FIXED, "app/extra.py": EXTRA}, "fix parse, add merge")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [], "app/extra.py": [MUTATES]}))
    code, report = review(pr, monkeypatch, wire)
    assert code == 1  # the leak, carried from the first run
    assert [f["title"] for f in report["findings"]] == [MUTATES["title"]]
    assert [c["title"] for c in report["pull_request"]["carried"]] == [LEAK["title"]]
    threads = {p.fingerprint: p for p in side.posted()}
    split = next(
        fp for fp, p in posted.items() if p.fingerprint in threads and threads[fp].resolved
    )
    assert (
        threads[split].replies[-1].startswith(RESOLVED)
        and pr.head[:12] in threads[split].replies[-1]
    )
    assert len(threads) == 3 and sum(not p.resolved for p in threads.values()) == 2
    state = summary_state(side.summaries()[0])
    assert state is not None and state.head == pr.head and len(state.findings) == 2

    # 4. A person dismisses the leak, another resolves the merge finding's thread; a force-push
    #    reviews the whole request again and reports both again: neither is posted again.
    leak = next(p for p in threads.values() if not p.resolved and p.fingerprint in posted)
    mutates = next(p for p in threads.values() if p.fingerprint not in posted)
    side.dismiss(leak.id, "reviewflow: dismiss false alarm, closed by the caller")
    side.resolve(mutates.id)
    pr.force_push({"app/settings.py": FIXED, "app/extra.py": EXTRA})
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [LEAK], "app/extra.py": [MUTATES]}))
    code, report = review(pr, monkeypatch, wire)
    assert code == 0 and report["pull_request"]["scope"] == "full" and report["findings"] == []
    dismissed = {d["title"]: d["detail"] for d in report["dropped"] if d["reason"] == "dismissed"}
    assert dismissed[LEAK["title"]] == "dismissed by @alice: false alarm, closed by the caller"
    assert dismissed[MUTATES["title"]].startswith("thread resolved")
    assert len(side.posted()) == 3 and len(side.summaries()) == 1  # nothing posted twice
    assert "gate passed" in side.summaries()[0] and "No open findings" in side.summaries()[0]

    token = side.token().encode()
    for root in (rf_home, tmp_path, prefect_api_home):
        for path in root.rglob("*"):
            assert not path.is_file() or token not in path.read_bytes(), path


def test_a_deployed_run_takes_its_platform_token_from_a_secret_block() -> None:
    Secret(value="glpat-from-block-123").save("reviewflow-test-gitlab", overwrite=True)
    config = deployed_config({"publish": {"token_block": "reviewflow-test-gitlab"}}, {})
    token = publish_token(config)
    assert token is not None and token.get_secret_value() == "glpat-from-block-123"
    assert publish_token(deployed_config({}, {})) is None
    missing = deployed_config({"publish": {"token_block": "no-such-block"}}, {})
    with pytest.raises(ConfigError, match=r"invalid value for 'publish\.token_block': 'no-such"):
        publish_token(missing)


def test_a_deployed_run_publishes_with_its_secret_block_and_the_token_stays_there(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    prefect_api_home: Path,
) -> None:
    """No token in the worker's environment: the flow reads the block's, checks it before the
    review and holds it for the review's publishing task; no file holds it afterwards."""
    with open_side("github") as side:
        Secret(value=side.token()).save("reviewflow-test-publish", overwrite=True)
        for name in TOKEN_ENV_VARS:
            monkeypatch.delenv(name, raising=False)
        pr = PullRequest.create(tmp_path, side)
        wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
        code, report = _deployed(pr, monkeypatch, wire, block="reviewflow-test-publish")
        assert code == 1 and len(side.posted()) == 1 and len(side.summaries()) == 1
        assert report["pull_request"]["url"]
        token = side.token().encode()
    for root in (rf_home, tmp_path, prefect_api_home):
        for path in root.rglob("*"):
            assert not path.is_file() or token not in path.read_bytes(), path
