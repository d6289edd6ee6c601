"""Every platform as GitHub (`test_publish_failures.py`): a token the platform refuses stops the
review before any model request (exit 2, one line, nothing written); a token that reads but
cannot write (a fork's) leaves the gate's exit code and says so in one warning line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.target import token_variable
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.publish.scenario import NUMBER, PROJECT, SPLIT, PullRequest, Side, use_env
from tests.publish.sides import READ_ONLY_TOKENS, open_side
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")
WRONG = "wrong-token-0000000000000000"
NAMES = {"gitlab": "GitLab", "bitbucket": "Bitbucket", "gitea": "Gitea", "azure": "Azure DevOps"}


@pytest.fixture(params=sorted(READ_ONLY_TOKENS))
def key(request: pytest.FixtureRequest) -> str:
    """The side's key in `sides.py` (Bitbucket Cloud's and Data Center's share a name)."""
    return str(request.param)


@pytest.fixture
def side(key: str) -> Iterator[Side]:
    with open_side(key) as opened:
        yield opened


def _review(pr: PullRequest, tmp_path: Path) -> int:
    args = ["review", "--repo", str(pr.repo.root), "--report-dir", str(tmp_path / "out")]
    args += ["--publish", "auto", *getattr(pr.side, "cli_args", ())]  # a side's flags win
    return main([*args, "--console", "off", "--no-progress"])


def test_a_refused_token_fails_before_any_model_request(
    side: Side,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pr = PullRequest.create(tmp_path, side)
    use_env(monkeypatch, wire, side.env(WRONG))
    assert _review(pr, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and NAMES[side.name] in err and "token" in err, err
    assert f"(the token from {token_variable(side.name, side.env(WRONG))}" in err, err
    assert WRONG not in err and wire.requests() == []
    assert not (tmp_path / "out").exists()


def test_a_read_only_token_keeps_the_gate_and_warns_once(
    key: str,
    side: Side,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pr = PullRequest.create(tmp_path, side)
    token = READ_ONLY_TOKENS[key]
    use_env(monkeypatch, wire, side.env(token))
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    assert _review(pr, tmp_path) == 1  # the gate's, not publishing's
    err = capsys.readouterr().err
    [warning] = [line for line in err.splitlines() if "warning" in line]
    assert f"publishing on {PROJECT}#" in warning and "failed" in warning, warning
    assert (tmp_path / "out" / "review-report.json").is_file()
    assert side.posted() == [] and token not in err


@pytest.mark.parametrize("clone", ["shallow", "without the head"])
def test_a_clone_that_lacks_the_request_s_history_says_how_to_fetch_it(
    clone: str,
    side: Side,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pr = PullRequest.create(tmp_path, side)
    checkout = GitRepo(tmp_path / "checkout")
    shallow = ["--depth", "1"] if clone == "shallow" else []
    pr.repo.git(
        "clone", "--quiet", "--single-branch", *shallow, pr.bare.as_uri(), str(checkout.root)
    )
    if clone == "shallow":  # the request's head alone, as a CI checkout gives by default
        head_ref = spec_of(side.name).request_head or "refs/heads/feature"
        checkout.git("fetch", "--quiet", "--depth", "1", "origin", head_ref.format(n=NUMBER))
        checkout.git("checkout", "--quiet", "FETCH_HEAD")
    pr.repo = checkout  # else only the target branch: the request's head was never fetched
    use_env(monkeypatch, wire, side.env())
    assert _review(pr, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and wire.requests() == [], err
    if clone == "shallow":
        assert "this clone is shallow" in err and "full history" in err, err
    else:
        assert f"head commit {pr.head[:12]} is not in this clone: fetch it" in err, err
