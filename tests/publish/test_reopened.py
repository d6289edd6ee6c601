"""A thread a person opens again counts as open at once, on every platform that can reopen
(GitHub unresolve, GitLab unresolve, Bitbucket Cloud and Data Center reopen, Gitea unresolve,
Azure DevOps back to Active): a re-run on the same head, which sends no model request, fails
the gate on it and its summary lists it. Driven through the CLI against each platform's fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.publish.bitbucket.markup import from_bitbucket, to_bitbucket
from reviewflow.publish.comments import comment_body
from reviewflow.pullrequest.markers import finding_fingerprint, posted_finding
from reviewflow.pullrequest.state import PriorFinding
from tests.flows.reviewer import ScriptedReviewer
from tests.publish.memory import finding
from tests.publish.scenario import EXTRA, FIXED, LEAK, SPLIT, PullRequest, Side, use_env
from tests.publish.sides import PLATFORMS, open_side
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(params=PLATFORMS)
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    with open_side(request.param) as opened:
        yield opened


def _cli(
    pr: PullRequest, monkeypatch: pytest.MonkeyPatch, wire: WireServer, run: str
) -> tuple[int, dict[str, Any]]:
    out = pr.repo.root.parent / f"out-{run}"
    use_env(monkeypatch, wire, pr.side.env())
    args = ["review", "--repo", str(pr.repo.root), "--publish", "auto", "--report-dir", str(out)]
    args += getattr(pr.side, "cli_args", ())
    code = main([*args, "--console", "summary", "--no-progress"])
    return code, json.loads((out / "review-report.json").read_text())


def test_a_thread_a_person_opens_again_fails_the_gate_at_once(
    side: Side, tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    pr = PullRequest.create(tmp_path, side)
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
    assert _cli(pr, monkeypatch, wire, "first")[0] == 1

    # A push fixes the split: reviewflow resolves its thread; a person resolves the leak's.
    pr.push({"app/settings.py": FIXED, "app/extra.py": EXTRA}, "fix parse")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [], "app/extra.py": []}))
    assert _cli(pr, monkeypatch, wire, "fixed")[0] == 1  # the leak, carried
    threads = {p.fingerprint: p for p in side.posted()}
    [leak] = [p for p in threads.values() if not p.resolved]
    [split] = [p for p in threads.values() if p.resolved]
    side.resolve(leak.id)
    code, report = _cli(pr, monkeypatch, wire, "resolved")
    assert code == 0 and "No open findings" in side.summaries()[0]

    # A person opens both threads again: the same head, no model request, the gate fails.
    side.reopen(leak.id)
    side.reopen(split.id)
    requests = len(wire.requests())
    code, report = _cli(pr, monkeypatch, wire, "reopened")
    assert len(wire.requests()) == requests and report["pull_request"]["scope"] == "incremental"
    assert code == 1
    carried = {c["title"] for c in report["pull_request"]["carried"]}
    assert carried == {SPLIT["title"], LEAK["title"]}
    [summary] = side.summaries()
    assert "gate failed" in summary and "high 2" in summary
    for title in (SPLIT["title"], LEAK["title"]):
        assert title.replace("'", "") in summary.replace("'", "").replace("\\", ""), title
    assert all(not p.resolved for p in side.posted())  # the person's call stands

    # And again: still open (the summary's state leaves them to their threads).
    code, report = _cli(pr, monkeypatch, wire, "again")
    assert code == 1 and len(report["pull_request"]["carried"]) == 2


def test_a_finding_comment_describes_its_finding_and_an_older_one_names_it_only() -> None:
    posted = finding("src/a.py", 3, "x = 1", severity="medium", title="Off by one (twice) -->")
    body = comment_body(posted, "github")
    assert posted_finding(body) == PriorFinding.of(posted)
    assert posted_finding(from_bitbucket(to_bitbucket(body))) == PriorFinding.of(posted)
    older = f"<!-- reviewflow:finding {posted.fingerprint} -->\n\n**MEDIUM** · correctness · t"
    assert finding_fingerprint(older) == posted.fingerprint and posted_finding(older) is None
    broken = f"<!-- reviewflow:finding {posted.fingerprint} e30= -->\n"  # `{}`: no severity
    assert finding_fingerprint(broken) == posted.fingerprint and posted_finding(broken) is None
