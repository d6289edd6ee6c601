"""The `ci-review` entry flow in-process (one Prefect test API): gate, reasons, repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.deployed import ci_review, deployed_config
from reviewflow.errors import ConfigError
from reviewflow.git.mirror import cache_path
from reviewflow.report.gate import summary_key
from tests.deploy.readback import artifacts, assert_failed_with_reason
from tests.deploy.scenario import RISKY, SPLIT, origin, push, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_gate_passes_then_fails_on_a_high_finding(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    use_model(monkeypatch, wire)
    repo, bare = origin(tmp_path)
    repo.write("app/settings.py", RISKY)
    head = repo.commit("read settings")
    push(repo, "main")
    url = bare.as_uri()

    wire.respond("openai", ScriptedReviewer({"app/settings.py": []}))
    passed = ci_review(url, commit=head, return_state=True)
    assert passed.is_completed() and passed.message == "gate passed"
    [summary] = artifacts(passed.state_details.flow_run_id)[summary_key(url)]
    assert passed.result() == summary and summary["exit_code"] == 0
    assert set(summary["reports"]) == {"json", "markdown", "sarif"}

    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    failed = ci_review(url, commit=head, no_cache=True, return_state=True)
    assert failed.message.startswith("gate failed: 1 finding(s), high app/settings.py:10")
    assert_failed_with_reason(failed)  # the reason, never "Unexpected result for failed state"
    [summary] = artifacts(failed.state_details.flow_run_id)[summary_key(url)]
    assert (summary["status"], summary["exit_code"], summary["findings"]) == ("complete", 1, 1)
    assert summary["review_id"] != passed.result()["review_id"]
    clone = cache_path(url, rf_home)
    assert (clone / ".git").is_dir()  # the URL was cloned under the home, once
    assert TEST_KEY not in "".join(p.read_text() for p in rf_home.rglob("*.json"))


def _risky_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: WireServer
) -> tuple[GitRepo, str]:
    """A local repository whose last commit reads settings riskily, and that commit."""
    use_model(monkeypatch, wire)
    repo, _ = origin(tmp_path)
    repo.write("app/settings.py", RISKY)
    return repo, repo.commit("read settings")


def test_a_lower_fail_on_is_an_override(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, head = _risky_commit(tmp_path, monkeypatch, wire)
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    state = ci_review(
        str(repo.root),
        commit=head,
        overrides={"review": {"fail_on": "critical"}},
        return_state=True,
    )
    assert state.is_completed(), state.message
    assert state.result()["findings"] == 1


def test_secrets_and_bad_requests_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"model\.api_key cannot be a parameter"):
        deployed_config({"model": {"api_key": "sk-x"}}, {})
    with pytest.raises(ConfigError, match="holds a password"):
        ci_review.fn("https://user:hunter2@example.invalid/r.git", commit="HEAD")
    with pytest.raises(ConfigError, match="needs 'commit'"):
        ci_review.fn("/nowhere")


def test_an_empty_repository_fails_the_run_naming_the_parameter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    state = ci_review(" ", commit="HEAD", return_state=True)
    assert state.is_failed()
    assert "ConfigError: invalid value for 'repository': ' ' (accepted: a Git URL" in str(
        state.message
    )


def test_key_from_a_secret_block(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.blocks.system import Secret

    use_model(monkeypatch, wire)
    monkeypatch.delenv("REVIEWFLOW_MODEL_API_KEY")  # the worker holds no key itself
    Secret(value="sk-from-block-123").save("reviewflow-test-key", overwrite=True)
    repo, _ = origin(tmp_path)
    repo.write("app/settings.py", RISKY)
    head = repo.commit("read settings")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": []}))
    block = {"model": {"api_key_block": "reviewflow-test-key"}}

    state = ci_review(str(repo.root), commit=head, overrides=block, return_state=True)
    assert state.is_completed(), state.message
    assert {r.credential for r in wire.requests()} == {"sk-from-block-123"}
    with pytest.raises(ConfigError, match="existing Prefect Secret block"):
        deployed_config({"model": {"api_key_block": "no-such-block"}}, {})


def test_a_report_that_cannot_be_written_fails_the_run_with_the_reason(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, head = _risky_commit(tmp_path, monkeypatch, wire)
    wire.respond("openai", ScriptedReviewer({"app/settings.py": []}))
    output = {"report_dir": str(tmp_path / "reports"), "markdown": "review-report.json/x.md"}
    state = ci_review(str(repo.root), commit=head, overrides={"output": output}, return_state=True)
    assert state.message.startswith("report not written: cannot write ")
    assert_failed_with_reason(state)
    [summary] = artifacts(state.state_details.flow_run_id)[summary_key(str(repo.root))]
    assert summary["exit_code"] == 2 and "markdown" not in summary["reports"]
    assert (tmp_path / "reports" / "review-report.sarif").is_file()  # the others are written


def test_a_deployed_audit_reads_the_commits_tree(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`files` audits a file the reviewed commit does not touch, as the commit has it; the
    rules are read at `trusted_ref` (an audit has no base), and `commit` is required."""
    repo, _ = _risky_commit(tmp_path, monkeypatch, wire)
    repo.write("notes.txt", "later\n")
    head = repo.commit("notes")
    repo.write("app/settings.py", "edited on disk, not committed\n")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    audit = {"files": ["app"], "trusted_ref": head, "return_state": True}
    state = ci_review(str(repo.root), commit=head, **audit)
    assert state.message.startswith("gate failed: 1 finding(s), high app/settings.py:10")
    with pytest.raises(ConfigError, match=r"a deployed audit .* needs 'commit'"):
        ci_review.fn(str(repo.root), all_files=True)
    with pytest.raises(ConfigError, match=r"^'files' and 'all_files' cannot be combined"):
        ci_review.fn(str(repo.root), commit=head, files=["app"], all_files=True)
    with pytest.raises(ConfigError, match=r"^'files' needs one or more paths"):
        ci_review.fn(str(repo.root), commit=head, files=[])
