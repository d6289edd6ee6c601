"""Settings in the user's words, through the CLI: a preview with no model names model.name, an
unknown config key gets its closest key, a setting's error names where its value came from."""

from __future__ import annotations

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
