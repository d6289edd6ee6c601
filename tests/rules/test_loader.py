"""Layer precedence, fall-through, merge_system_rule, include/exclude, describe, bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reviewflow.errors import RulesError
from reviewflow.rules import RuleLayer, RuleOrigin, load_rules
from reviewflow.rules.system import SystemCatalog
from tests.gitutil import GitRepo
from tests.rules.helpers import write_json


def _rule(path: str, rule: str, merge: bool = False) -> dict[str, object]:
    return {"path": path, "rule": rule, "merge_system_rule": merge}


@pytest.fixture
def layered(repo: GitRepo, rf_home: Path, tmp_path: Path) -> Path:
    """Custom, project and global layers with overlapping patterns; returns the custom file."""
    custom = write_json(
        tmp_path / "custom" / "rules.json",
        {"rules": [_rule("src/special/**", "CUSTOM special"), _rule("*.md", "CUSTOM md")]},
    )
    write_json(
        repo.root / ".reviewflow/rules.json",
        {
            "rules": [
                _rule("src/**/*.py", "PROJECT src python"),
                _rule("*.py", "PROJECT any python"),
                _rule("*.md", "PROJECT md (shadowed by custom)"),
            ]
        },
    )
    write_json(
        rf_home / "rules.json",
        {"rules": [_rule("*.go", "GLOBAL go"), _rule("*.py", "GLOBAL py (shadowed)")]},
    )
    return custom


def test_layer_precedence_and_first_match(
    repo: GitRepo, rf_home: Path, layered: Path, system: SystemCatalog
) -> None:
    rules = load_rules(repo.root, rf_home, layered, system=system)
    special = rules.resolve("src/special/a.py")
    assert (special.layer, special.text, special.pattern) == (
        RuleLayer.CUSTOM,
        "CUSTOM special",
        "src/special/**",
    )
    assert special.source == str(layered)
    assert rules.resolve("README.md").text == "CUSTOM md"
    first = rules.resolve("src/pkg/a.py")
    assert (first.layer, first.text, first.source) == (
        RuleLayer.PROJECT,
        "PROJECT src python",
        ".reviewflow/rules.json",
    )
    assert rules.resolve("tools/x.PY").text == "PROJECT any python"
    go = rules.resolve("cmd/main.go")
    assert (go.layer, go.text, go.source) == (
        RuleLayer.GLOBAL,
        "GLOBAL go",
        str(rf_home / "rules.json"),
    )
    assert go.name is None and go.merged_with is None and go.reference is None


def test_fall_through_to_system_layer(
    repo: GitRepo, rf_home: Path, layered: Path, system: SystemCatalog
) -> None:
    rules = load_rules(repo.root, rf_home, layered, system=system)
    docker = rules.resolve("deploy/Dockerfile")
    assert (docker.layer, docker.source, docker.name, docker.pattern) == (
        RuleLayer.SYSTEM,
        "system:dockerfile",
        "dockerfile",
        "Dockerfile",
    )
    assert docker.text.endswith("DOCKER SYSTEM RULE")
    other = rules.resolve("data/thing.xyz")
    assert (other.source, other.pattern) == ("system:general", "**")


def test_custom_rule_does_not_disable_lower_layers(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    custom = write_json(tmp_path / "c.json", {"rules": []})
    write_json(rf_home / "rules.json", {"rules": [_rule("*.go", "GLOBAL go")]})
    rules = load_rules(repo.root, rf_home, custom, system=system)
    assert rules.resolve("a.go").text == "GLOBAL go"


def test_no_user_layers(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.layers == ()
    assert rules.resolve("a.py").source == "system:python"
    assert rules.warnings == []


def test_builtin_fallback_when_system_rules_lack_one(repo: GitRepo, rf_home: Path) -> None:
    rules = load_rules(repo.root, rf_home, system=SystemCatalog(()))
    resolved = rules.resolve("a.py")
    assert (resolved.layer, resolved.source, resolved.pattern) == (
        RuleLayer.SYSTEM,
        "system:builtin",
        "**",
    )
    assert resolved.text


def test_merge_system_rule(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    write_json(
        repo.root / ".reviewflow/rules.json",
        {"rules": [_rule("*.py", "USER PY\n", merge=True), _rule("*.txt", "USER TXT", True)]},
    )
    rules = load_rules(repo.root, rf_home, system=system)
    merged = rules.resolve("a/b.py")
    assert merged.layer is RuleLayer.PROJECT
    assert merged.merged_with == "python"
    assert merged.text.startswith("USER PY\n\n")
    assert merged.text.endswith("PYTHON SYSTEM RULE")
    assert merged.text.index("USER PY") < merged.text.index("PYTHON SYSTEM RULE")
    # merging with the fallback when no specific system rule matches
    txt = rules.resolve("notes.txt")
    assert txt.merged_with == "general"
    assert txt.text.startswith("USER TXT") and txt.text.endswith("GENERAL SYSTEM RULE")


def test_include_exclude_from_highest_declaring_layer_unmerged(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    custom = write_json(tmp_path / "c.json", {"exclude": ["**/generated/**"]})
    write_json(
        repo.root / ".reviewflow/rules.json",
        {"include": ["src/**/*.custom"], "exclude": ["**/vendor/**"]},
    )
    write_json(rf_home / "rules.json", {"include": ["**/*.tpl"], "exclude": ["*.lock"]})
    rules = load_rules(repo.root, rf_home, custom, system=system)
    assert rules.exclude.patterns == ("**/generated/**",)
    assert rules.exclude_from == RuleOrigin(RuleLayer.CUSTOM, str(custom))
    assert rules.exclude.match("vendor/x.go") is None  # not merged with the project's exclude
    assert rules.include.patterns == ("src/**/*.custom",)
    assert rules.include_from == RuleOrigin(RuleLayer.PROJECT, ".reviewflow/rules.json")
    assert rules.include.match("src/a/b.CUSTOM") == "src/**/*.custom"
    assert rules.include.match("x.tpl") is None


def test_an_empty_list_still_declares_the_key(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    write_json(repo.root / ".reviewflow/rules.json", {"exclude": []})
    write_json(rf_home / "rules.json", {"exclude": ["*.lock"], "include": ["*.tpl"]})
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.exclude.patterns == ()
    assert rules.exclude_from is not None and rules.exclude_from.layer is RuleLayer.PROJECT
    assert rules.include_from is not None and rules.include_from.layer is RuleLayer.GLOBAL


def test_nothing_declared(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    rules = load_rules(repo.root, rf_home, system=system)
    assert not rules.include and rules.include_from is None
    assert not rules.exclude and rules.exclude_from is None


def test_describe(repo: GitRepo, rf_home: Path, layered: Path, system: SystemCatalog) -> None:
    write_json(rf_home / "rules.json", {"exclude": ["*.lock"], "rules": [_rule("*.go", "G")]})
    summary = load_rules(repo.root, rf_home, layered, system=system).describe()
    json.dumps(summary)
    assert [entry["layer"] for entry in summary] == ["custom", "project", "global", "system"]
    assert summary[0] == {
        "layer": "custom",
        "source": str(layered),
        "rules": 2,
        "failed_references": 0,
        "include": None,
        "exclude": None,
    }
    assert summary[2]["exclude"] == ["*.lock"]
    assert summary[3]["names"] == ["dockerfile", "github-actions", "python", "yaml", "general"]


# --- bad input: one-line RulesError naming the file and the line or key ---------------------


def test_json_syntax_error_names_file_line_and_column(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write(".reviewflow/rules.json", '{\n  "rules": [\n    {"path": "*.py",}\n  ]\n}\n')
    with pytest.raises(RulesError) as info:
        load_rules(repo.root, rf_home, system=system)
    message = str(info.value)
    assert ".reviewflow/rules.json" in message
    assert "line 3 column 21" in message
    assert "\n" not in message


def test_syntax_error_in_global_and_custom_files(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    (rf_home / "rules.json").write_text('{"rules": [}')
    with pytest.raises(RulesError, match=r"rules\.json line 1 column 12"):
        load_rules(repo.root, rf_home, system=system)
    custom = tmp_path / "mine.json"
    custom.write_text("\n\n  oops")
    with pytest.raises(RulesError, match=r"mine\.json line 3 column 3"):
        load_rules(repo.root, rf_home, custom, system=system)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"rules": [{"path": "*.py", "rule": "x", "merge": True}]}, "unknown key 'rules[0].merge'"),
        ({"includes": ["x"]}, "unknown key 'includes'"),
        ({"rules": [{"rule": "x"}]}, "missing key 'rules[0].path'"),
        ({"rules": [{"path": "*.py", "rule": "x", "merge_system_rule": "yes"}]}, "merge_system"),
        ({"rules": [{"path": "*.py", "rule": 3}]}, "'rules[0].rule'"),
        ({"rules": [{"path": "*.py", "rule": "  "}]}, "'rules[0].rule': the rule text is empty"),
        ({"exclude": "vendor/**"}, "'exclude'"),
        ({"include": [None]}, "'include[0]'"),
        ({"rules": [{"path": "!x", "rule": "t"}]}, "'rules[0].path': invalid glob '!x'"),
        ([], "top level must be a JSON object"),
    ],
)
def test_schema_errors_name_file_and_key(
    repo: GitRepo, rf_home: Path, system: SystemCatalog, data: object, needle: str
) -> None:
    write_json(repo.root / ".reviewflow/rules.json", data)
    with pytest.raises(RulesError) as info:
        load_rules(repo.root, rf_home, system=system)
    assert needle in str(info.value)
    assert ".reviewflow/rules.json" in str(info.value)


def test_duplicate_keys_and_bad_encoding(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    repo.write(".reviewflow/rules.json", '{"include": [], "include": ["x"]}')
    with pytest.raises(RulesError, match="duplicate key 'include'"):
        load_rules(repo.root, rf_home, system=system)
    repo.write(".reviewflow/rules.json", b'{"include": ["\xff"]}')
    with pytest.raises(RulesError, match="not UTF-8"):
        load_rules(repo.root, rf_home, system=system)


def test_unreadable_custom_rule_file(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(RulesError, match=r"cannot read rule file .*nope\.json: no such file"):
        load_rules(repo.root, rf_home, missing, system=system)
    with pytest.raises(RulesError, match=r"cannot read rule file .*: Is a directory"):
        load_rules(repo.root, rf_home, tmp_path, system=system)


def test_custom_rule_file_in_a_symlink_loop(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(RulesError, match=r"cannot read rule file .*loop\.json: Too many levels"):
        load_rules(repo.root, rf_home, loop, system=system)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_custom_rule_file_without_permission(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    locked = write_json(tmp_path / "locked.json", {"rules": []})
    locked.chmod(0)
    try:
        with pytest.raises(RulesError, match=r"cannot read rule file .*: Permission denied"):
            load_rules(repo.root, rf_home, locked, system=system)
    finally:
        locked.chmod(0o600)


def test_project_rules_file_that_is_a_directory(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    (repo.root / ".reviewflow/rules.json").mkdir(parents=True)
    with pytest.raises(RulesError, match=r"rules\.json: not a regular file"):
        load_rules(repo.root, rf_home, system=system)


def test_project_rules_symlink_outside_the_repository(
    repo: GitRepo, rf_home: Path, tmp_path: Path, system: SystemCatalog
) -> None:
    outside = write_json(tmp_path / "elsewhere.json", {"rules": []})
    repo.symlink(".reviewflow/rules.json", str(outside))
    with pytest.raises(RulesError, match="resolves outside"):
        load_rules(repo.root, rf_home, system=system)


def test_oversized_rules_file(repo: GitRepo, rf_home: Path, system: SystemCatalog) -> None:
    repo.write(".reviewflow/rules.json", '{"include": []}' + " " * (1024 * 1024))
    with pytest.raises(RulesError, match="larger than"):
        load_rules(repo.root, rf_home, system=system)


def test_ruleset_pickles_for_distributed_tasks(
    repo: GitRepo, rf_home: Path, layered: Path, system: SystemCatalog
) -> None:
    import pickle

    rules = load_rules(repo.root, rf_home, layered, system=system)
    clone = pickle.loads(pickle.dumps(rules))
    for path in ("src/special/a.py", "cmd/main.go", "deploy/Dockerfile", "x.unknown"):
        assert clone.resolve(path) == rules.resolve(path)
    assert clone.describe() == rules.describe()


def test_user_rule_patterns_describe_the_file(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    write_json(
        repo.root / ".reviewflow/rules.json",
        {
            "rules": [
                _rule("*.js", "USER JS"),
                _rule("vendor", "USER VENDOR NAME"),
                _rule("lib/*", "USER LIB TOP"),
                _rule("third_party/", "USER THIRD PARTY"),
            ]
        },
    )
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.resolve("packages/chart.js/src/main.py").source == "system:python"
    assert rules.resolve("packages/chart.js/src/main.JS").text == "USER JS"
    assert rules.resolve("vendor/x.py").source == "system:python"
    assert rules.resolve("tools/vendor").text == "USER VENDOR NAME"
    assert rules.resolve("lib/a.py").text == "USER LIB TOP"
    assert rules.resolve("lib/sub/a.py").source == "system:python"
    assert rules.resolve("third_party/x/y.c").text == "USER THIRD PARTY"


def test_include_exclude_keep_directory_semantics(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    write_json(
        repo.root / ".reviewflow/rules.json",
        {"include": ["src"], "exclude": ["vendor", "*.js"]},
    )
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.exclude.match("vendor/lib/x.go") == "vendor"
    assert rules.exclude.match("a/vendor/x.py") == "vendor"
    assert rules.exclude.match("packages/chart.js/src/main.py") == "*.js"
    assert rules.exclude.match("src/main.py") is None
    assert rules.include.match("src/pkg/a.py") == "src"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"exclude": ["{a," * 1500 + "b" + "}" * 1500]}, "'exclude'"),
        ({"include": ["ok", "{a," * 11 + "b" + "}" * 11]}, "'include'"),
        ({"rules": [{"path": "{a," * 11 + "b" + "}" * 11, "rule": "t"}]}, "'rules[0].path'"),
        ({"exclude": ["x" * 2000]}, "'exclude'"),
    ],
)
def test_oversized_or_deeply_nested_globs_are_rules_errors(
    repo: GitRepo, rf_home: Path, system: SystemCatalog, data: object, key: str
) -> None:
    write_json(repo.root / ".reviewflow/rules.json", data)
    with pytest.raises(RulesError) as info:
        load_rules(repo.root, rf_home, system=system)
    message = str(info.value)
    assert ".reviewflow/rules.json" in message and key in message and "invalid glob" in message


def test_pathological_exclude_pattern_is_matched_quickly(
    repo: GitRepo, rf_home: Path, system: SystemCatalog
) -> None:
    pattern = "src/" + "a*" * 11 + "b"
    write_json(repo.root / ".reviewflow/rules.json", {"exclude": [pattern]})
    rules = load_rules(repo.root, rf_home, system=system)
    assert rules.exclude.match("src/" + "a" * 60 + ".py") is None
    assert rules.exclude.match("src/" + "a" * 60 + "b") == pattern
