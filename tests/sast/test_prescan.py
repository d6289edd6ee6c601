"""The pre-scan as plain functions: targets, one offline semgrep run, added lines only,
trimming, the cache, the trust of `--sast-rules`, and what the model is given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.errors import SastError
from reviewflow.git.models import DiffMode
from reviewflow.request import ReviewRequest
from reviewflow.review import templates
from reviewflow.review.jobs import file_jobs
from reviewflow.sast.cache import SastCache, cache_key
from reviewflow.sast.models import SastResult
from reviewflow.sast.ruleset import load_sast_rules
from reviewflow.sast.scan import on_added_lines, prescan, trim
from reviewflow.sast.semgrep import Semgrep, scan_command
from reviewflow.sast.targets import Target, from_hunks, new_side_targets
from reviewflow.select.scope import Scope, collect, select
from tests.gitutil import GitRepo

RULE = """rules:
  - id: team-no-print
    languages: [python]
    severity: INFO
    message: {message}
    pattern: print(...)
"""


def scope_of(repo: GitRepo, **flags: str) -> Scope:
    request = ReviewRequest.from_flags(str(repo.root), home=str(repo.root.parent / "home"), **flags)
    return select(collect(request, 3), request, 1 << 20)


def result(start: int, end: int | None = None, rule: str = "r") -> SastResult:
    return SastResult(
        rule_id=rule,
        path="a.py",
        start_line=start,
        end_line=end or start,
        severity="error",
        message="m",
    )


def test_only_results_touching_added_lines_are_kept_in_line_order() -> None:
    target = Target("a.py", b"", frozenset({5, 9}))
    found = {"a.py": [result(9), result(2), result(4, 6), result(7, 8), result(9)]}
    kept = on_added_lines([target], found)
    assert [(r.start_line, r.end_line) for r in kept["a.py"]] == [(4, 6), (9, 9)]
    assert on_added_lines([Target("b.py", b"", frozenset({1}))], found) == {}


def test_trim_keeps_rule_path_lines_severity_and_one_bounded_message_line() -> None:
    raw = {
        "check_id": "rules.bundled.python.reviewflow-python-ssrf",
        "path": "src/app/x.py",
        "start": {"line": 3, "col": 1},
        "end": {"line": 4, "col": 9},
        "extra": {"message": "a\n  b " + "c" * 1000, "severity": "ERROR", "lines": "secret code"},
    }
    trimmed = trim(raw, frozenset({"reviewflow-python-ssrf"}))
    assert trimmed is not None
    assert (trimmed.rule_id, trimmed.path, trimmed.severity) == (
        "reviewflow-python-ssrf",
        "src/app/x.py",
        "error",
    )
    assert (trimmed.start_line, trimmed.end_line) == (3, 4)
    assert trimmed.message.startswith("a b c") and len(trimmed.message) == 400
    assert set(trimmed.model_dump()) == {
        "rule_id",
        "path",
        "start_line",
        "end_line",
        "severity",
        "message",
    }
    assert trim({"check_id": "x"}, frozenset()) is None


def test_the_scan_command_is_offline_and_local() -> None:
    command = scan_command(Semgrep("/x/semgrep", "1.185.0"), ["rules/a.yaml"], ["src/a.py"])
    assert {"--metrics=off", "--disable-version-check", "--experimental", "--json"} <= set(command)
    configs = [command[i + 1] for i, arg in enumerate(command) if arg == "--config"]
    assert configs == ["rules/a.yaml"]
    assert command[-2:] == ["--", "src/a.py"]


def test_prescan_runs_semgrep_once_for_all_files_and_reuses_the_cache(
    shell_change: GitRepo, semgrep: str, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    counting = tmp_path / "semgrep"
    counting.write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {semgrep} "$@"\n')
    counting.chmod(0o755)
    settings = ReviewSettings(sast=True, sast_semgrep=str(counting))
    scope = scope_of(shell_change, commit="HEAD")
    home = str(tmp_path / "home")

    first = prescan(scope, settings, home)
    assert first.files == 2 and first.reused == 0
    assert log.read_text().split().count("scan") == 1  # one run for both files
    assert {p: [r.rule_id for r in found] for p, found in first.results.items()} == {
        "app/run.py": ["reviewflow-python-subprocess-shell-true"],  # the old os.system is not
        "web/page.js": ["reviewflow-js-xss"],
    }
    [shell] = first.for_path("app/run.py")
    assert (shell.start_line, shell.severity) == (10, "warning")

    again = prescan(scope, settings, home)
    assert (again.reused, again.results) == (2, first.results)
    assert log.read_text().split().count("scan") == 1  # all from the cache
    assert prescan(scope, settings, home, refresh=True).reused == 0


def test_cache_key_follows_content_path_rules_and_version(tmp_path: Path) -> None:
    base = cache_key("rules", "1.185.0", "a.py", b"x")
    assert base == cache_key("rules", "1.185.0", "a.py", b"x")
    others = [
        cache_key("rules2", "1.185.0", "a.py", b"x"),
        cache_key("rules", "1.186.0", "a.py", b"x"),
        cache_key("rules", "1.185.0", "b.py", b"x"),
        cache_key("rules", "1.185.0", "a.py", b"y"),
    ]
    assert base not in others and len(set(others)) == 4
    cache = SastCache(tmp_path)
    cache.put(base, [result(3)])
    assert cache.get(base) == [result(3)]
    assert SastCache(tmp_path, refresh=True).get(base) is None
    [stored] = (tmp_path / "cache" / "sast").iterdir()
    assert stored.stat().st_mode & 0o077 == 0


def test_a_diff_that_is_not_in_the_working_tree_is_scanned_from_its_hunks(
    repo: GitRepo, semgrep: str, tmp_path: Path
) -> None:
    repo.write("tool.py", "import subprocess\n\n\ndef f(x):\n    return x\n")
    repo.commit("base")
    repo.write(
        "tool.py", "import subprocess\n\n\ndef f(x):\n    return subprocess.run(x, shell=True)\n"
    )
    diff = subprocess.run(["git", "diff"], cwd=repo.root, capture_output=True, check=True).stdout
    subprocess.run(["git", "checkout", "--", "tool.py"], cwd=repo.root, check=True)
    patch = tmp_path / "change.diff"
    patch.write_bytes(diff)
    scope = scope_of(repo, diff_source=str(patch))
    assert scope.change.spec.mode is DiffMode.STDIN
    [target] = new_side_targets(scope)
    assert target.from_hunks and target.content == from_hunks(scope.selection.kept[0].file)
    assert target.content.split(b"\n")[4] == b"    return subprocess.run(x, shell=True)"
    scan = prescan(scope, ReviewSettings(sast=True, sast_semgrep=semgrep), str(tmp_path / "h"))
    assert [r.start_line for r in scan.for_path("tool.py")] == [5]


def test_user_rules_in_the_repository_come_from_the_trusted_ref(repo: GitRepo) -> None:
    repo.write(".semgrep/team.yaml", RULE.format(message="base rule"))
    base = repo.commit("team rules")
    repo.write(".semgrep/team.yaml", RULE.format(message="rewritten by the change"))
    repo.write(".semgrep/extra.yml", RULE.format(message="added by the change"))
    repo.commit("change its own rules")

    trusted = load_sast_rules(".semgrep", repo.root, base)  # in CI: the change's base
    own = {f.name: f.data.decode() for f in trusted.files if f.name.startswith("user/")}
    assert own == {"user/team.yaml": RULE.format(message="base rule")}
    assert trusted.source == f"bundled + .semgrep@{base}"

    local = load_sast_rules(str(repo.root / ".semgrep"), repo.root, None)  # outside CI: disk
    assert {f.name for f in local.files if f.name.startswith("user/")} == {
        "user/team.yaml",
        "user/extra.yml",
    }
    assert local.digest != trusted.digest
    with pytest.raises(SastError, match=r"--sast-rules rules@.*no \.yaml or \.yml rule file"):
        load_sast_rules("rules", repo.root, base)


def test_user_rules_outside_the_repository_are_the_operators(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    outside = tmp_path / "operator-rules"
    outside.mkdir()
    (outside / "team.yaml").write_text(RULE.format(message="operator"))
    rules = load_sast_rules(str(outside), repo.root, base)
    assert "team-no-print" in rules.rule_ids()
    (outside / "broken.yaml").write_text("rules: [\n")
    with pytest.raises(SastError, match=r"broken\.yaml is not valid YAML"):
        load_sast_rules(str(outside), repo.root, base).rule_ids()


def test_the_model_gets_results_in_the_user_message_and_guidance_in_the_system_prompt(
    shell_change: GitRepo, sast_settings: ReviewSettings, tmp_path: Path
) -> None:
    scope = scope_of(shell_change, commit="HEAD")
    scan = prescan(scope, sast_settings, str(tmp_path / "home"))
    jobs = {job.path: job for job in file_jobs(scope, sast_settings, "en-US", scan)}
    job = jobs["app/run.py"]
    user = templates.main_user(job, 0, None, 6)
    system = templates.main_system(job)
    fenced = user.split('<untrusted-data label="SAST pre-scan (semgrep)', 1)[1]
    assert "- reviewflow-python-subprocess-shell-true [warning] app/run.py:10: " in fenced
    assert "reviewflow-python" not in system and "app/run.py" not in system
    assert system.startswith(templates.system("main"))
    for words in (
        "Verify each one independently",
        "Dismiss false positives silently",
        "Look beyond them",
        "never a finding on its own",
    ):
        assert words in system
    plain = jobs["app/run.py"].model_copy(update={"sast": ()})
    assert templates.main_system(plain) == templates.system("main")
    assert "SAST" not in templates.main_user(plain, 0, None, 6)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
def test_semgrep_runs_with_no_network_at_all(
    shell_change: GitRepo, semgrep: str, tmp_path: Path
) -> None:
    """In a network namespace with no interface (not even a route out), the scan works."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("no permission to create a network namespace here")
    isolated = tmp_path / "semgrep-offline"
    isolated.write_text(f'#!/bin/sh\nexec unshare -n {semgrep} "$@"\n')
    isolated.chmod(0o755)
    settings = ReviewSettings(sast=True, sast_semgrep=str(isolated))
    scan = prescan(scope_of(shell_change, commit="HEAD"), settings, str(tmp_path / "home"))
    assert scan.total == 2 and os.environ.get("REVIEWFLOW_MODEL_API_KEY") is None
