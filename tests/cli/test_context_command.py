"""`reviewflow context` through the real CLI on real repositories: the text per file with its
tokens, the `--json` document, the change flags of `review`, bad input as one line (exit 2),
and no model or Prefect server anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo

UTIL = '''def scale(value: int, factor: int = 2) -> int:
    """Multiply a value by the factor."""
    return value * factor


def gone(x):
    return x
'''
MAIN = """from pkg.util import gone, scale


def run(items: list[int]) -> list[int]:
    return [scale(gone(item)) for item in items]
"""
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def change(repo: GitRepo) -> tuple[GitRepo, str, str]:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/util.py", UTIL)
    repo.write("pkg/main.py", MAIN)
    repo.write("Dockerfile", "FROM python:3.11\n")
    base = repo.commit("base")
    repo.write(
        "pkg/util.py",
        UTIL.replace("value * factor", "value * factor + 1").split("\n\n\n")[0] + "\n",
    )
    repo.write("Dockerfile", "FROM python:3.12\n")
    return repo, base, repo.commit("change")


def test_text_names_each_file_with_its_pack_and_tokens(
    change: tuple[GitRepo, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _, head = change
    assert main(["context", "--repo", str(repo.root), "--commit", head]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("context: 2 files reviewed, 1 with context beyond the diff (")
    at = lines.index(next(line for line in lines if line.startswith("pkg/util.py: ")))
    assert lines[at].endswith(" tokens")
    pack = "\n".join(lines[at + 1 :])
    assert "  - deleted function gone, old line 6: def gone(x)" in pack
    assert "    pkg/main.py:5 in `def run(items: list[int]) -> list[int]`:" in pack
    assert (
        "  - edited function scale, line 1: def scale(value: int, factor: int = 2) -> int" in pack
    )
    assert "Dockerfile: nothing beyond the diff" in out
    assert lines[-1].startswith("index: 3 source files (3 parsed, 0 reused) in ")


def test_json_is_the_documented_shape_and_the_index_is_reused(
    change: tuple[GitRepo, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base, head = change
    flags = ["context", "--repo", str(repo.root), "--from", base, "--to", head]
    assert main([*flags, "--json", str(tmp_path / "c.json")]) == 0
    capsys.readouterr()
    assert main([*flags, "--json", "-"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)  # stdout: the JSON alone, the text on stderr
    assert captured.err.startswith("context: 2 files reviewed")
    assert set(doc) == {"files", "index"}
    assert set(doc["index"]) == {"files", "parsed", "reused", "seconds"}
    assert (doc["index"]["files"], doc["index"]["parsed"], doc["index"]["reused"]) == (3, 0, 3)
    files = {f["path"]: f for f in doc["files"]}
    assert files["Dockerfile"] == {
        "path": "Dockerfile",
        "tokens": 0,
        "changed_symbols": [],
        "used_definitions": [],
    }
    util = files["pkg/util.py"]
    assert (
        set(util) == {"path", "tokens", "changed_symbols", "used_definitions"}
        and util["tokens"] > 0
    )
    by_name = {s["name"]: s for s in util["changed_symbols"]}
    assert by_name["gone"] == {
        "name": "gone",
        "kind": "function",
        "line": 6,
        "change": "deleted",
        "references": [
            {"path": "pkg/main.py", "line": 1, "in": ""},
            {"path": "pkg/main.py", "line": 5, "in": "def run(items: list[int]) -> list[int]"},
        ],
    }
    assert by_name["scale"]["change"] == "edited" and by_name["scale"]["line"] == 1
    first = json.loads((tmp_path / "c.json").read_text())
    assert first["files"] == doc["files"]  # the same change gives the same document


def test_a_workspace_change_and_a_diff_on_stdin(
    change: tuple[GitRepo, str, str], tmp_path: Path, rf_home: Path
) -> None:
    repo, _, _ = change
    repo.write(
        "pkg/extra.py",
        "from pkg.util import scale\n\n\ndef twice(v):\n    return scale(scale(v))\n",
    )
    repo.write("pkg/util.py", UTIL.replace("def scale(value", "def scale(value, offset=0"))
    env = {**os.environ, "REVIEWFLOW_HOME": str(rf_home), "PYTHONPATH": str(ROOT)}
    for flags, stdin in (
        ([], None),  # the workspace: the edit and the untracked file
        (
            ["--diff", "-"],
            subprocess.run(["git", "diff"], cwd=repo.root, capture_output=True).stdout,
        ),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _NO_PREFECT,
                "context",
                "--repo",
                str(repo.root),
                *flags,
                "--json",
                "-",
            ],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=repo.root,
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.decode().splitlines()[-1] == "prefect imported: False"
        files = {f["path"]: f for f in json.loads(done.stdout)["files"]}
        scale = next(s for s in files["pkg/util.py"]["changed_symbols"] if s["name"] == "scale")
        used_in = {(r["path"], r["line"]) for r in scale["references"]}
        assert ("pkg/main.py", 5) in used_in
        assert (("pkg/extra.py", 5) in used_in) == (not flags)  # untracked: the workspace's


_NO_PREFECT = (
    "import sys\n"
    "from flows.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "print('prefect imported:', 'prefect' in sys.modules, file=sys.stderr)\n"
    "raise SystemExit(code)\n"
)


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--commit", "nope"], "nope"),
        (["--from", "HEAD"], "--from"),
        (["--preview"], "--preview"),
        (["--model", "gpt-4o"], "--model"),
        (["--commit", "HEAD", "--json", "{repo}/pkg/util.py/out.json"], "cannot write"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    change: tuple[GitRepo, str, str],
    capsys: pytest.CaptureFixture[str],
    rf_home: Path,
    flags: list[str],
    words: str,
) -> None:
    repo, _, _ = change
    flags = [flag.replace("{repo}", str(repo.root)) for flag in flags]
    try:
        code = main(["context", "--repo", str(repo.root), *flags])
    except SystemExit as stop:  # the parser's own errors
        code = stop.code
    assert code == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("reviewflow: error: ") and words in err[0]
    assert "internal error" not in err[0] and captured.out == ""
    assert not (rf_home / "index").exists()  # refused before any work
