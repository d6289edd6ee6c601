"""`--sast` refusals: the install hint the README gives, and a bad rule file by its real path."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.errors import SastError
from reviewflow.sast.ruleset import load_sast_rules
from reviewflow.sast.semgrep import locate
from tests.gitutil import GitRepo

RULE = "rules:\n  - id: team-no-print\n    pattern: print(...)\n    message: m\n"
RULE += "    languages: [python]\n    severity: WARNING\n"


def test_missing_semgrep_suggests_an_environment_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SastError) as refused:
        locate(None, python=str(tmp_path / "bin" / "python"))
    message = str(refused.value)
    assert "python -m venv ~/.reviewflow-semgrep" in message
    assert "~/.reviewflow-semgrep/bin/pip install 'semgrep==1.185.0'" in message
    assert "reviewflow config set review.sast_semgrep ~/.reviewflow-semgrep/bin/semgrep" in message
    assert not message.split(": ", 2)[-1].startswith("pip install")


def test_a_bad_rule_file_is_named_by_its_real_path(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    outside = tmp_path / "operator-rules"
    (outside / "sub").mkdir(parents=True)
    (outside / "team.yaml").write_text(RULE)
    (outside / "sub" / "bad.yaml").write_text("rules: [\n")
    with pytest.raises(SastError) as refused:
        load_sast_rules(str(outside), repo.root, base).rule_ids()
    assert f"{outside / 'sub' / 'bad.yaml'} is not valid YAML" in str(refused.value)
    assert "user/" not in str(refused.value)


def test_a_bad_rule_file_at_the_trusted_ref_names_path_and_commit(repo: GitRepo) -> None:
    repo.write("a.py", "x = 1\n")
    repo.write("rules/bad.yaml", "rules: [\n")
    base = repo.commit("base")
    with pytest.raises(SastError) as refused:
        load_sast_rules("rules", repo.root, base).rule_ids()
    assert f"rules/bad.yaml@{base[:12]} is not valid YAML" in str(refused.value)
