"""`config test` and a model review's early checks, through the CLI against the wire server."""

from __future__ import annotations

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, HttpError, Text, WireServer


def use_wire(monkeypatch: pytest.MonkeyPatch, wire: WireServer, protocol: str) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", protocol)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url(protocol))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    monkeypatch.setenv("REVIEWFLOW_MODEL_TIMEOUT", "5s")


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_config_test_reports_success(
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    protocol: str,
) -> None:
    use_wire(monkeypatch, wire, protocol)
    wire.script(protocol, [Text("OK")])
    assert main(["config", "test"]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and TEST_KEY not in out
    assert len(wire.requests()) == 1


def test_config_test_explains_a_rejected_key(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_wire(monkeypatch, wire, "openai")
    wire.script("openai", [HttpError(401)])
    assert main(["config", "test"]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert captured.out == ""  # the failure is an exit 2: its one line goes to stderr
    assert err.count("\n") == 1 and err.startswith("reviewflow: error: model openai/test-model")
    assert "key" in err.lower()
    assert TEST_KEY not in err


def test_config_test_with_the_placeholder_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert "model.name" in err and err.count("\n") == 1


def test_review_refuses_the_placeholder_model_before_prefect(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("a.py", "x = 1\n")
    assert main(["review", "--repo", str(repo.root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "reviewflow config set model.name" in err and "REVIEWFLOW_MODEL_NAME" in err


def test_review_refuses_a_missing_key(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "anthropic")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "claude-test")
    assert main(["review", "--repo", str(repo.root)]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_review_keeps_the_key_out_of_the_prefect_environment(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import flows.review_flow
    from reviewflow.report.outcome import ReviewRun
    from tests.report.samples import empty_outcome

    seen: dict[str, object] = {}

    def fake_run_review(request: object, config: object, **options: object) -> ReviewRun:
        seen["env"] = dict(os.environ)
        seen["config"] = config
        return ReviewRun(outcome=empty_outcome(), written={})

    monkeypatch.setattr(flows.review_flow, "run_review", fake_run_review)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # start no local server
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("GEMINI_API_KEY", "g-unrelated-key")
    repo.write("a.py", "x = 1\n")
    assert main(["review", "--repo", str(repo.root)]) == 0
    env = seen["env"]
    assert isinstance(env, dict)
    assert TEST_KEY not in env.values() and "g-unrelated-key" not in env.values()
    assert env["DO_NOT_TRACK"] == "1" and env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    config = seen["config"]
    assert config.model.api_key.get_secret_value() == TEST_KEY  # type: ignore[attr-defined]


def test_config_test_on_an_endpoint_that_does_not_implement_the_api(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """HTTP 501 is the wrong URL or protocol, not a busy provider: no retry, no "try later"."""
    use_wire(monkeypatch, wire, "openai")
    wire.script("openai", [HttpError(501)])
    assert main(["config", "test"]) == 2
    out = capsys.readouterr().err
    assert "HTTP 501 (not implemented: wrong endpoint or protocol)" in out
    assert "check model.protocol and model.endpoint" in out
    assert "try again later" not in out
    assert len(wire.requests()) == 1
