"""System rules: SKILL.md parsing, validation, ordering, fallback, the shipped documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.errors import RulesError
from reviewflow.rules.system import (
    SystemCatalog,
    builtin_system_rules,
    load_system_rules,
    parse_skill,
)
from tests.rules.helpers import skill_text, write_skills


def test_catalog_order_and_first_match(system: SystemCatalog) -> None:
    names = [rule.name for rule in system.rules]
    assert names == ["dockerfile", "github-actions", "python", "yaml", "general"]
    found = system.match("src/app.py")
    assert found is not None and found[0].name == "python" and found[1] == "*.py"
    assert found[0].source == "system:python"
    assert found[0].text.endswith("PYTHON SYSTEM RULE")


def test_target_beats_language(system: SystemCatalog) -> None:
    found = system.match(".github/workflows/ci.yml")
    assert found is not None and found[0].name == "github-actions"
    other = system.match("config/app.yml")
    assert other is not None and other[0].name == "yaml"


def test_fallback_only_when_nothing_specific_matches(tmp_path: Path) -> None:
    # The fallback sorts before "python" by priority, yet is still tried last.
    catalog = load_system_rules(
        write_skills(
            tmp_path,
            {
                "aaa-general": ("fallback", ["**"], 1, "FALLBACK"),
                "python": ("language", ["*.py"], 50, "PY"),
            },
        )
    )
    assert [r.name for r in catalog.rules] == ["python", "aaa-general"]
    found = catalog.match("x.py")
    assert found is not None and found[0].name == "python"
    found = catalog.match("x.unknown")
    assert found is not None and found[0].name == "aaa-general"


def test_priority_defaults_by_kind(tmp_path: Path) -> None:
    catalog = load_system_rules(
        write_skills(
            tmp_path,
            {
                "lang": ("language", ["*.x"], None, "L"),
                "tgt": ("target", ["*.x"], None, "T"),
            },
        )
    )
    assert [(r.name, r.priority) for r in catalog.rules] == [("tgt", 10), ("lang", 50)]


def test_non_rule_entries_are_ignored(tmp_path: Path) -> None:
    write_skills(tmp_path, {"python": ("language", ["*.py"], 50, "PY")})
    (tmp_path / "README.md").write_text("not a rule")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "empty").mkdir()
    assert [r.name for r in load_system_rules(tmp_path).rules] == ["python"]


def test_missing_directory_gives_empty_catalog(tmp_path: Path) -> None:
    assert load_system_rules(tmp_path / "nope").rules == ()


def _doc(**overrides: str) -> str:
    base = {
        "name": "python",
        "description": "Python defects.",
        "kind": "language",
        "paths": '["*.py"]',
        "body": "# Python\n\nLook for bugs.",
    }
    base.update(overrides)
    return (
        f"---\nname: {base['name']}\ndescription: {base['description']}\nmetadata:\n"
        f"  kind: {base['kind']}\n  paths: {base['paths']}\n---\n{base['body']}\n"
    )


def test_parse_skill_fields() -> None:
    rule = parse_skill("python", _doc())
    assert rule.name == "python"
    assert rule.description == "Python defects."
    assert rule.kind == "language"
    assert rule.paths == ("*.py",)
    assert rule.priority == 50
    assert rule.text == "# Python\n\nLook for bugs."


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("# no front matter", "missing front matter"),
        ("---\nname: python\n", "unterminated"),
        (_doc(name="other"), "must equal directory"),
        (_doc(description="''"), "description"),
        (_doc(kind="dialect"), "metadata.kind"),
        (_doc(paths="[]"), "metadata.paths"),
        (_doc(body=""), "empty description or body"),
        ("---\nname: [unclosed\n---\nbody\n", "bad YAML"),
        ("---\n- a list\n---\nbody\n", "python"),
    ],
)
def test_invalid_skill_documents(text: str, needle: str) -> None:
    with pytest.raises(RulesError, match="invalid system rule python") as info:
        parse_skill("python", text)
    assert needle in str(info.value)


def test_invalid_glob_is_reported_with_the_rule_name() -> None:
    catalog = SystemCatalog((parse_skill("python", _doc(paths='["!x"]')),))
    with pytest.raises(RulesError, match="invalid system rule python: invalid glob"):
        catalog.match("a.py")


def test_skill_text_helper_round_trips() -> None:
    rule = parse_skill("x", skill_text("x", "target", ["a/{b,c}.yml"], 10, "BODY"))
    assert rule.kind == "target" and rule.text == "# x\n\nBODY"


def test_builtin_rules_load_and_are_cached() -> None:
    catalog = builtin_system_rules()
    assert catalog is builtin_system_rules()
    names = [rule.name for rule in catalog.rules]
    assert names, "no SKILL.md shipped under reviewflow/rules/system/"
    assert len(set(names)) == len(names)
    kinds = [rule.kind for rule in catalog.rules]
    assert kinds == sorted(kinds, key=lambda kind: kind == "fallback")
    found = catalog.match("pkg/module.py")
    assert found is not None and found[0].name == "python"


def test_rules_system_module_is_not_shadowed() -> None:
    import reviewflow.rules.system as module

    assert module.__file__ is not None and module.__file__.endswith("system.py")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("packages/chart.js/src/main.py", "python"),
        ("com.acme.go/src/Main.java", "java"),
        ("org.acme.c/src/App.kt", "kotlin"),
        ("deps/lib.rs/README", "general"),
        ("weird.py/README", "general"),
        ("src/Dockerfile.d/base.conf", "general"),
        ("a/b/.github/workflows/ci.yml", "github-actions"),
        ("deploy/k8s/app/svc.yaml", "kubernetes"),
    ],
)
def test_system_patterns_describe_the_file_not_its_directories(path: str, expected: str) -> None:
    found = builtin_system_rules().match(path)
    assert found is not None and found[0].name == expected, found
