"""Settings in the user's words, through the CLI: a preview with no model names model.name, an
unknown config key gets its closest key, a setting's error names where its value came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo


def test_a_preview_with_no_model_says_to_set_the_model_name(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "x = 2\n")
    assert main(["review", "--preview", "--repo", str(repo.root)]) == 0
    out = capsys.readouterr().out
    assert "no model set: set model.name (or pass --model)" in out
    assert "configured-model" not in out
    assert main(["review", "--preview", "--repo", str(repo.root), "--model", "house-llm"]) == 0
    assert "no price for model 'house-llm': set model.price" in capsys.readouterr().out


def test_a_cost_budget_with_no_model_says_to_set_the_model_name(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "x = 2\n")
    assert main(["review", "--preview", "--repo", str(repo.root), "--max-cost", "2"]) == 2
    err = capsys.readouterr().err
    assert "no model is set: set model.name (or pass --model)" in err
    assert "configured-model" not in err


@pytest.fixture
def changed(repo: GitRepo) -> GitRepo:
    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "x = 2\n")
    return repo


def _preview(repo: GitRepo, *extra: str) -> int:
    return main(["review", "--preview", "--repo", str(repo.root), "--json", "-", *extra])


def test_a_stored_platform_against_an_exported_protocol_names_both_and_can_be_fixed(
    changed: GitRepo,
    rf_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = rf_home / "config.yaml"
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    both = (
        f"conflicting settings: 'model.platform' in {path} is 'bedrock' and "
        "REVIEWFLOW_MODEL_PROTOCOL is 'openai': the bedrock platform speaks the anthropic "
        "protocol, not openai; change or unset one of them"
    )
    assert main(["config", "set", "model.platform", "bedrock"]) == 0
    out, err = capsys.readouterr()
    assert out == f"set model.platform in {path}\n"
    assert err == f"reviewflow: note: {both}\n"

    assert main(["config", "show"]) == 0  # it still runs, the problem beside the value
    out, err = capsys.readouterr()
    assert f"  platform: bedrock  # problem: {both}\n" in out
    assert f"  protocol: openai  # problem: {both}\n" in out
    assert "  name: configured-model\n" in out and err == f"reviewflow: note: {both}\n"
    assert "REVIEWFLOW_MODEL_PLATFORM" not in out + err  # a variable never set

    assert _preview(changed) == 2
    assert capsys.readouterr().err == f"reviewflow: error: {both}\n"
    assert _preview(changed, "--protocol", "anthropic") == 0  # a flag settles it
    capsys.readouterr()

    assert main(["config", "set", "model.name", "claude-sonnet-4"]) == 0  # other keys: set
    assert main(["config", "set", "model.platform", ""]) == 0  # unset: the default again
    out, err = capsys.readouterr()
    assert out.endswith(f"unset model.platform in {path}\n") and "problem" not in err
    assert main(["config", "show"]) == 0
    out, err = capsys.readouterr()
    assert "# problem" not in out and err == ""
    assert "  platform: direct\n" in out and "  name: claude-sonnet-4\n" in out
    assert _preview(changed) == 0


def test_a_stored_conflict_does_not_stop_config_set_and_a_new_one_is_refused(
    changed: GitRepo, rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rf_home / "config.yaml"
    path.write_text("model:\n  platform: azure\n  protocol: gemini\n")
    both = f"'model.platform' in {path} is 'azure' and 'model.protocol' in {path} is 'gemini'"
    assert _preview(changed) == 2
    assert both in capsys.readouterr().err
    assert main(["config", "set", "model.name", "gpt-4o"]) == 0
    assert both in capsys.readouterr().err  # still there: noted
    assert main(["config", "set", "model.protocol", "anthropic"]) == 2  # still conflicting
    err = capsys.readouterr().err
    assert f"'model.platform' in {path} is 'azure' and 'model.protocol' is 'anthropic'" in err
    assert main(["config", "set", "model.protocol", "openai"]) == 0
    assert capsys.readouterr().err == ""
    assert path.read_text() == "model:\n  platform: azure\n  protocol: openai\n  name: gpt-4o\n"
    assert _preview(changed) == 0


def test_an_unknown_config_key_gets_the_closest_key_not_every_key(
    changed: GitRepo, rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = rf_home / "config.yaml"
    path.write_text("review:\n  concurency: 3\n")
    assert _preview(changed) == 2
    err = capsys.readouterr().err
    assert err == (
        f"reviewflow: error: unknown config key 'review.concurency' in {path} "
        "(did you mean 'review.concurrency'?)\n"
    )
    assert main(["config", "show"]) == 0  # and the problem beside the section
    out = capsys.readouterr().out
    assert "  # concurency: problem: unknown config key 'review.concurency'" in out
    assert main(["config", "set", "review.concurency", ""]) == 0  # a stored unknown key: unset
    assert "concurency" not in path.read_text()
    assert main(["config", "set", "model.nmae", "gpt-4o"]) == 2
    assert "(did you mean 'model.name'?)" in capsys.readouterr().err
    assert main(["config", "set", "review.colour", "blue"]) == 2  # nothing close: its section
    err = capsys.readouterr().err
    assert "(the review keys: concurrency, context_lines," in err
    assert "model.name" not in err and "publish.token_block" not in err
    assert _preview(changed) == 0
