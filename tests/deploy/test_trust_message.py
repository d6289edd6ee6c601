"""A deployed run's trust errors name its `trusted_ref` parameter, never the CLI's
`--trusted-ref` flag (and the CLI's still name the flag)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from flows.deployed import ci_review
from tests.deploy.scenario import use_model
from tests.gitutil import GitRepo
from tests.wire_server import WireServer


def _root_commit(tmp_path: Path) -> tuple[GitRepo, str]:
    """A repository whose only commit has no parent: no trusted base for its rules."""
    repo = GitRepo.init(tmp_path / "repo")
    repo.write("app.py", "x = 1\n")
    return repo, repo.commit("first")


@pytest.mark.usefixtures("prefect_harness")
def test_a_deployed_run_names_its_trusted_ref_parameter(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_model(monkeypatch, wire)
    repo, head = _root_commit(tmp_path)
    state = ci_review(str(repo.root), commit=head, return_state=True)
    assert state.is_failed()
    message = str(state.message)
    assert "set the deployment's trusted_ref parameter to a base ref (e.g. origin/main)" in message
    assert "--trusted-ref" not in message
    blank = ci_review(str(repo.root), commit=head, trusted_ref=" ", return_state=True)
    assert blank.is_failed()
    assert "the trusted_ref parameter needs a ref" in str(blank.message)
    assert "--trusted-ref" not in str(blank.message)
    assert wire.requests() == []  # refused before any model request


def test_the_cli_names_its_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, head = _root_commit(tmp_path)
    monkeypatch.setenv("CI", "true")
    assert main(["review", "--preview", "--repo", str(repo.root), "--commit", head]) == 2
    err = capsys.readouterr().err
    assert "pass --trusted-ref <base ref> (e.g. origin/main)" in err
    assert "trusted_ref parameter" not in err
