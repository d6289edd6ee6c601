"""`review --preview` and `rules check` end to end on real repositories."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo
from tests.publish.scenario import Side
from tests.wire_server import WireServer


@pytest.fixture
def mixed(repo: GitRepo) -> GitRepo:
    """A workspace change touching every filter outcome."""
    repo.write("src/app.py", "def f():\n    return 1\n")
    repo.write("gone.go", "package gone\n")
    repo.write("img.png", b"\x89PNG\x00\x01")
    repo.commit("base")
    repo.write("src/app.py", "def f():\n    return 2\n")
    (repo.root / "gone.go").unlink()
    repo.write("img.png", b"\x89PNG\x00\x02")
    repo.write("docs/guide.md", "# Guide\n")
    repo.write("tests/test_app.py", "def test_f():\n    assert True\n")
    repo.write("vendor/lib/x.go", "package x\n")
    repo.write("Dockerfile", "FROM python:3.11\n")
    repo.write("web/App.TSX", "export const A = 1;\n")
    return repo


def preview_json(repo: GitRepo, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "preview.json"
    code = main(["review", "--preview", "--repo", str(repo.root), "--json", str(out), *extra])
    assert code == 0
    return json.loads(out.read_text())


def test_preview_lists_kept_and_excluded_with_reasons(
    mixed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = preview_json(mixed, tmp_path)
    kept = {f["path"]: f for f in doc["files"]}
    assert set(kept) == {"src/app.py", "Dockerfile", "web/App.TSX"}
    assert kept["src/app.py"]["rule"]["layer"] == "system"
    assert kept["src/app.py"]["rule"]["name"] == "python"
    assert kept["Dockerfile"]["rule"]["name"] == "dockerfile"
    assert kept["web/App.TSX"]["rule"]["name"] == "javascript-typescript"
    assert (kept["src/app.py"]["added"], kept["src/app.py"]["removed"]) == (1, 1)
    reasons = {e["path"]: e["reason"] for e in doc["excluded_files"]}
    assert reasons == {
        "gone.go": "deleted",
        "img.png": "binary",
        "docs/guide.md": "unsupported_ext",
        "tests/test_app.py": "default_path",
        "vendor/lib/x.go": "default_path",
    }
    assert doc["stats"] == {"files_changed": 8, "files_reviewed": 3, "files_excluded": 5}
    assert doc["metadata"]["mode"] == "workspace"
    text = capsys.readouterr().out
    assert "Reviewed files (3)" in text and "Excluded files (5)" in text
    assert "docs/guide.md" in text and "unsupported_ext" in text


def test_json_on_stdout_is_alone_there(mixed: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """`--json -` pipes into jq: the human preview goes to stderr."""
    assert main(["review", "--preview", "--repo", str(mixed.root), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["stats"]["files_reviewed"] == 3
    assert "Reviewed files (3)" in err


def test_project_rules_include_exclude_and_custom_rule(mixed: GitRepo, tmp_path: Path) -> None:
    mixed.write(
        ".reviewflow/rules.json",
        json.dumps(
            {
                "include": ["docs/**/*.md", "tests/**"],
                "exclude": ["web/**"],
                "rules": [{"path": "src/**/*.py", "rule": "Check the return values."}],
            }
        ),
    )
    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps({"rules": [{"path": "Dockerfile", "rule": "Pin images."}]}))
    doc = preview_json(mixed, tmp_path, "--rule", str(custom))
    kept = {f["path"]: f for f in doc["files"]}
    assert kept["docs/guide.md"]["included_by"] == "docs/**/*.md"
    assert "tests/test_app.py" in kept
    assert kept["src/app.py"]["rule"]["layer"] == "project"
    assert kept["Dockerfile"]["rule"]["layer"] == "custom"
    reasons = {e["path"]: e["reason"] for e in doc["excluded_files"]}
    assert reasons["web/App.TSX"] == "user_exclude"
    assert reasons[".reviewflow/rules.json"] == "unsupported_ext"


def test_commit_and_range_modes(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("a.py", "x = 2\n")
    repo.write("b.rs", "fn main() {}\n")
    head = repo.commit("feature")
    doc = preview_json(repo, tmp_path, "--commit", head)
    assert doc["metadata"]["mode"] == "commit"
    assert doc["metadata"]["head_sha"] == head
    assert {f["path"] for f in doc["files"]} == {"a.py", "b.rs"}
    doc = preview_json(repo, tmp_path, "--from", "main", "--to", "feature")
    assert (doc["metadata"]["base_sha"], doc["metadata"]["head_sha"]) == (base, head)
    assert {f["path"] for f in doc["files"]} == {"a.py", "b.rs"}


def test_stdin_diff(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    diff = repo.git("diff").encode()
    monkeypatch.setattr(sys, "stdin", binary_stdin(diff))
    doc = preview_json(repo, tmp_path, "--diff", "-")
    assert (doc["metadata"]["mode"], doc["metadata"]["diff_file"]) == ("stdin", None)
    assert [f["path"] for f in doc["files"]] == ["a.py"]


def test_diff_file_is_reported_as_diff_with_its_name(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    patch = tmp_path / "change.patch"
    patch.write_bytes(repo.git("diff").encode())
    doc = preview_json(repo, tmp_path, "--diff", str(patch))
    assert (doc["metadata"]["mode"], doc["metadata"]["diff_file"]) == ("diff", str(patch))
    assert f"Preview of diff {patch} change in" in capsys.readouterr().out


def test_rules_check(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write(".reviewflow/rules.json", json.dumps({"exclude": ["gen/**"]}))
    assert main(["rules", "check", "pkg/server.go", "--repo", str(repo.root)]) == 0
    out = capsys.readouterr().out
    assert "decision: reviewed" in out and "system go" in out
    assert main(["rules", "check", "gen/x.go", "--repo", str(repo.root), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["reviewed"], result["reason"]) == (False, "user_exclude")


def test_python_m_flows_review_from_the_repository(mixed: GitRepo, rf_home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flows.review", "--preview"],
        cwd=mixed.root,
        env=dict(os.environ, REVIEWFLOW_HOME=str(rf_home)),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "Reviewed files (3)" in result.stdout
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from flows.cli.main import main; main(['review', '--preview']);"
            "sys.exit(1 if 'prefect' in sys.modules else 0)",
        ],
        cwd=mixed.root,
        env=dict(os.environ, REVIEWFLOW_HOME=str(rf_home)),
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, "preview must not import prefect"


def binary_stdin(data: bytes) -> SimpleNamespace:
    """A stand-in for sys.stdin whose .buffer yields `data`."""
    return SimpleNamespace(buffer=io.BytesIO(data))


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("tests/test_app.py", True),
        ("pkg/app_test.go", True),
        ("web/App.spec.tsx", True),
        ("src/main/java/FooTest.java", True),
        ("src/main/java/FooIT.java", True),
        ("src/main/java/Submit.java", False),
        ("src/Latest.php", False),
        ("src/LoginTest.php", True),
        ("lib/thing_spec.rb", True),
        ("node_modules/x/index.js", True),
        ("api/v1/service_pb2.py", True),
        ("static/app.min.js", True),
        ("src/contest.py", False),
        ("src/testing.py", False),
        ("Tests/Foo.cs", True),
        ("polls/tests.py", True),
        ("src/MyApp.Tests/Helpers.cs", True),
        ("src/MyApp.UnitTests/Helpers.cs", True),
        ("spec/models/user_spec.rb", True),
        ("spec/support/helpers.rb", True),
        ("pkg/spec/parser.go", False),
        ("api/spec/openapi.yaml", False),
        ("src/MyApp.Testsuite/x.cs", False),
    ],
)
def test_default_paths(path: str, excluded: bool) -> None:
    from reviewflow.select.filtering import default_excluded

    assert (default_excluded(path) is not None) is excluded


def test_preview_says_where_its_prices_come_from(
    mixed: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from reviewflow.cost.prices import bundled_table

    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    assert main(["review", "--preview", "--repo", str(mixed.root)]) == 0
    as_of = bundled_table()["as_of"]
    note = f"prices: the bundled table of {as_of} (USD per million tokens); model.price overrides"
    assert note in capsys.readouterr().out


@pytest.fixture(params=["github", "gitlab"])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    from tests.publish import fake_github, fake_gitlab
    from tests.publish.scenario import GitHubSide, GitLabSide

    if request.param == "github":
        with fake_github.FakeGitHub() as github:
            yield GitHubSide(github)
    else:
        with fake_gitlab.FakeGitLab() as gitlab:
            yield GitLabSide(gitlab)


def test_preview_of_a_pull_request_previews_its_range_and_cost(
    side: Side, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: WireServer
) -> None:
    """`--preview --publish`: the request's base..head, read from the platform as the review
    reads it, not the (empty) workspace; no model request."""
    from tests.publish.scenario import PullRequest, use_env

    pr = PullRequest.create(tmp_path, side)
    use_env(monkeypatch, wire, side.env())
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    doc = preview_json(pr.repo, tmp_path, "--publish", "auto")
    assert (doc["metadata"]["base_sha"], doc["metadata"]["head_sha"]) == (pr.base, pr.head)
    assert [f["path"] for f in doc["files"]] == ["app/settings.py"]
    assert doc["estimate"]["requests"] > 0 and doc["estimate"]["cost"] > 0
    assert wire.requests() == []


def test_preview_of_a_pull_request_the_platform_refuses_is_one_line_and_exit_2(
    side: Side,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.publish.scenario import PullRequest, use_env

    pr = PullRequest.create(tmp_path, side)
    use_env(monkeypatch, wire, side.env(token="not-the-token"))
    args = ["review", "--preview", "--repo", str(pr.repo.root), "--publish", "auto"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("reviewflow: error: ") and "not-the-token" not in captured.err
    assert "token was refused (HTTP 401)" in captured.err  # the preflight's, as a review's
