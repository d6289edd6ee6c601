"""Publishing that cannot work is found before any model request (exit 2, one line);
publishing that fails after the review leaves the gate's exit code as it was, says so in one
warning line and puts the summary in `$GITHUB_STEP_SUMMARY`; rate limits are waited for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.flows.reviewer import ScriptedReviewer
from tests.publish import fake_github
from tests.publish.scenario import LEAK, PROJECT, SPLIT, GitHubSide, PullRequest, use_env
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")
READ_ONLY = "ghs_forkReadOnlyToken000000000000000000"


@pytest.fixture
def github() -> Iterator[GitHubSide]:
    with fake_github.FakeGitHub() as fake:
        fake.add_token(READ_ONLY, "github-actions[bot]", read_only=True)
        yield GitHubSide(fake)


def _review(pr: PullRequest, tmp_path: Path, *flags: str) -> int:
    out = tmp_path / "out"
    args = ["review", "--repo", str(pr.repo.root), "--report-dir", str(out), *flags]
    return main([*args, "--console", "off", "--no-progress"])


@pytest.mark.parametrize(
    ("env", "flags", "message"),
    [
        (
            {"GITHUB_TOKEN": ""},
            (),
            "--publish github needs a token: set REVIEWFLOW_GITHUB_TOKEN or GITHUB_TOKEN",
        ),
        ({"GITHUB_TOKEN": "ghp_wrong"}, (), "the GitHub token was refused (HTTP 401)"),
        ({}, ("--pull-request", "99"), "GitHub found no pull request acme/app#99"),
        ({}, ("--diff", "-"), "--publish reviews the request's commits: it cannot review a --diff"),
        ({}, ("--platform-repo", "bad"), "invalid value for --platform-repo: 'bad'"),
        (
            {"GITHUB_EVENT_PATH": ""},
            (),
            "--publish github needs the pull request: --pull-request N",
        ),
    ],
)
def test_what_cannot_publish_fails_before_any_model_request(
    env: dict[str, str],
    flags: tuple[str, ...],
    message: str,
    github: GitHubSide,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pr = PullRequest.create(tmp_path, github)
    use_env(monkeypatch, wire, {**github.env(), **env})
    assert _review(pr, tmp_path, "--publish", "github", *flags) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert "ghp_wrong" not in err and wire.requests() == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("failure", ["fork token", "API down"])
def test_a_publishing_failure_keeps_the_gate_and_writes_the_step_summary(
    failure: str,
    github: GitHubSide,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pr = PullRequest.create(tmp_path, github)
    step_summary = tmp_path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    env = {**github.env(), "GITHUB_STEP_SUMMARY": str(step_summary)}
    if failure == "fork token":
        env["GITHUB_TOKEN"] = READ_ONLY  # reads work, writes answer 403
    else:
        github.fake.server_error(503, count=20, kind="pulls.create_review")
    use_env(monkeypatch, wire, env)
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    assert _review(pr, tmp_path, "--publish", "auto") == 1  # the gate's, not publishing's
    err = capsys.readouterr().err
    [warning] = [line for line in err.splitlines() if "warning" in line]
    assert f"publishing on {PROJECT}#7 failed" in warning
    assert ("HTTP 403" if failure == "fork token" else "503") in warning
    written = step_summary.read_text()
    assert written.startswith("earlier step\n") and "gate failed" in written
    assert "Lines without" in written and "Not posted" in written
    assert (tmp_path / "out" / "review-report.json").is_file()
    assert READ_ONLY not in err + written


def test_a_rate_limit_is_waited_for_and_the_review_posted_once(
    github: GitHubSide, tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr = PullRequest.create(tmp_path, github)
    github.fake.secondary_rate_limit(count=1, retry_after=1, kind="pulls.create_review")
    use_env(monkeypatch, wire, github.env())
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
    assert _review(pr, tmp_path, "--publish", "auto") == 1
    assert len(github.posted()) == 2 and len(github.summaries()) == 1
    assert [r[3] for r in github.fake.reviews(7, repo=PROJECT)] == [2]
