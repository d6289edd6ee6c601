"""The bundled ruleset's own tests: `semgrep --test` on each rule's positive and negative cases
(tests/sast/rule_cases/, laid beside the rules as semgrep expects them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from reviewflow.sast.ruleset import BUNDLED

CASES = Path(__file__).parent / "rule_cases"
CATEGORIES = (
    "sql-injection",
    "command-injection",
    "unsafe-deserialization",
    "weak-crypto",
    "hardcoded-secret",
    "path-traversal",
    "ssrf",
    "xss",
)


def _rule_ids() -> set[str]:
    ids = set()
    for path in BUNDLED.rglob("*.yaml"):
        ids |= {rule["id"] for rule in yaml.safe_load(path.read_text())["rules"]}
    return ids


def test_every_rule_passes_semgrep_test_on_its_cases(semgrep: str, tmp_path: Path) -> None:
    for language in BUNDLED.iterdir():
        shutil.copytree(language, tmp_path / language.name)
        shutil.copytree(CASES / language.name, tmp_path / language.name, dirs_exist_ok=True)
    run = subprocess.run(
        [semgrep, "test", "--experimental", "--json", str(tmp_path)],
        capture_output=True,
        check=False,
        timeout=300,
    )
    report = json.loads(run.stdout)
    assert not report["config_missing_tests"], report["config_missing_tests"]
    assert not report["config_with_errors"], report["config_with_errors"]
    checks = {
        rule: check
        for result in report["results"].values()
        for rule, check in result["checks"].items()
    }
    assert set(checks) == _rule_ids()
    for rule, check in checks.items():
        assert check["passed"], (rule, check["matches"])
        assert any(m["expected_lines"] for m in check["matches"].values()), (
            f"{rule}: no ruleid case"
        )


def test_every_rule_has_a_negative_case_and_the_categories_cover_four_languages() -> None:
    cases = "\n".join(p.read_text() for p in CASES.rglob("*") if p.is_file())
    negative = set(re.findall(r"ok: (\S+)", cases))
    ids = _rule_ids()
    assert ids <= negative, ids - negative
    for language in ("python", "js", "go", "java"):
        covered = {c for c in CATEGORIES if f"reviewflow-{language}-{c}" in ids}
        missing = set(CATEGORIES) - covered - _not_applicable(language)
        assert not missing, (language, missing)
    assert {i for i in ids if i.endswith("shell-true")} >= {
        "reviewflow-python-subprocess-shell-true",
        "reviewflow-js-shell-true",
    }


def _not_applicable(language: str) -> set[str]:
    """Go has no deserializer that runs code (gob, encoding/json build plain data)."""
    return {"unsafe-deserialization"} if language == "go" else set()
