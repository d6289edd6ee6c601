"""The context pack in whole reviews through the CLI, on a real repository and the scripted
model server: what the main request holds, `--context off`, the index kept in the home."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.git.models import ChangeSpec, DiffMode
from reviewflow.git.repo import collect_change
from reviewflow.prompts import render
from reviewflow.review.newside import new_side_index
from reviewflow.review.reader import Snapshot
from reviewflow.review.templates import PROMPTS
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

UTIL = "def helper(x):\n    return x * 2\n\n\ndef gone():\n    return 1\n"
UTIL_NEW = "def helper(x, scale=2):\n    return x * scale\n"  # `gone` deleted, `helper` edited
MAIN = "from pkg.util import gone, helper\n\n\ndef run():\n    return helper(3) + gone()\n"
VENDORED = "from pkg.util import helper\n\n\ndef vend():\n    return helper(5)\n"


def _repo(repo: GitRepo) -> None:
    repo.write("pkg/util.py", UTIL)
    repo.write("pkg/main.py", MAIN)
    repo.write("vendor/lib.py", VENDORED)  # left out by the filter: never in a pack
    repo.commit("base")


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, repo: GitRepo, *flags: str
) -> dict[str, Any]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    code = main(["review", "--repo", str(repo.root), "--console", "summary", "--report-dir",
                 str(out), *flags])  # fmt: skip
    assert code == 0
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())
    return report


def _main_requests(wire: WireServer, since: int = 0) -> list[tuple[str, str]]:
    """(system, first user message) of each first main request, oldest first."""
    found = []
    for record in wire.requests("openai")[since:]:
        messages = record.body["messages"]
        text = json.dumps(record.body, ensure_ascii=False)
        if stage_of(text) == "main" and not any(m["role"] == "assistant" for m in messages):
            found.append((messages[0]["content"], messages[1]["content"]))
    return found


def test_the_main_request_holds_the_pack_and_off_is_todays_request(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    wire.respond("openai", ScriptedReviewer({"pkg/util.py": []}))
    _repo(repo)
    repo.write("pkg/util.py", UTIL_NEW)
    commit = repo.commit("scale")

    report = _review(monkeypatch, wire, repo, "--commit", "HEAD")
    [(system, user)] = _main_requests(wire)
    assert "Context pack:" in system
    assert '<untrusted-data label="context pack:' in user
    assert "- deleted function gone, old line 5" in user  # deleted and still used: shown
    assert "pkg/main.py:5 in `def run()`: return helper(3) + gone()" in user  # the calling line
    assert "edited function helper" in user
    assert "vendor/lib.py" not in user  # the filter leaves vendor/ out of every pack
    estimate = report["estimate"]["files"][0]
    assert estimate["path"] == "pkg/util.py" and estimate["context_tokens"] > 0

    # the review stored the new side's index in the home: the next build parses nothing
    change = collect_change(repo.root, ChangeSpec(mode=DiffMode.COMMIT, commit=commit))
    snapshot = Snapshot(repo_root=str(repo.root), ref=commit)
    again = new_side_index(snapshot, change, rf_home / "index")
    assert (again.stats.parsed, again.stats.reused) == (0, 3)

    seen = len(wire.requests())
    _review(monkeypatch, wire, repo, "--commit", "HEAD", "--context", "off")
    [(system_off, user_off)] = _main_requests(wire, seen)
    assert "context pack" not in (system_off + user_off).lower()
    # with the pack's block and its system paragraph taken out, `on` is `off` byte for byte
    start = user.index('<untrusted-data label="context pack:')
    end = user.index("</untrusted-data>", start) + len("</untrusted-data>")
    assert user_off == user[:start].rstrip("\n") + user[end:]
    paragraph = "\n" + render(PROMPTS, "main_context_system.j2")
    assert system_off == system.replace(paragraph, "")
    # and `off` renders the main templates exactly as before the feature
    assert system_off == render(PROMPTS, "main_system.j2")


def test_a_workspace_review_indexes_the_uncommitted_new_side(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    wire.respond("openai", ScriptedReviewer({"pkg/util.py": []}))
    _repo(repo)
    repo.write("pkg/util.py", UTIL_NEW)  # uncommitted
    repo.write("pkg/fresh.py", "from pkg.util import helper\n\n\ndef fresh():\n"
               "    return helper(9, scale=3)\n")  # untracked  # fmt: skip
    before = repo.git("status", "--porcelain")

    _review(monkeypatch, wire, repo)
    users = {user for _, user in _main_requests(wire)}
    [user] = [u for u in users if "Context for pkg/util.py" in u]
    assert "pkg/fresh.py:5 in `def fresh()`: return helper(9, scale=3)" in user
    assert "pkg/main.py:5 in `def run()`: return helper(3) + gone()" in user
    assert repo.git("status", "--porcelain") == before  # nothing staged, nothing written
    assert (rf_home / "index").stat().st_mode & 0o777 == 0o700


def test_the_preview_shows_the_pack_tokens_and_writes_nothing_to_the_repository(
    repo: GitRepo, rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repo(repo)
    repo.write("pkg/util.py", UTIL_NEW)  # uncommitted
    repo.write("pkg/fresh.py", "from pkg.util import helper\n")  # untracked
    index = repo.root / ".git" / "index"
    before = (repo.git("status", "--porcelain"), repo.git("count-objects", "-v"),
              repo.git("for-each-ref"), index.read_bytes())  # fmt: skip
    out = repo.root.parent / "preview.json"
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", str(out)]) == 0
    after = (repo.git("status", "--porcelain"), repo.git("count-objects", "-v"),
             repo.git("for-each-ref"), index.read_bytes())  # fmt: skip
    assert after == before
    header = next(line for line in capsys.readouterr().out.splitlines() if "requests" in line)
    assert header.split()[:5] == ["file", "requests", "prompt", "context", "completion"]
    files = {f["path"]: f for f in json.loads(out.read_text())["estimate"]["files"]}
    assert files["pkg/util.py"]["context_tokens"] > 0
    assert (rf_home / "index" / "index.sqlite").is_file()  # the store: under the home

    assert main(["review", "--preview", "--repo", str(repo.root), "--context", "off"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "requests" in line)
    assert "context" not in header.split()


def test_a_pack_naming_another_reviewed_file_does_not_confuse_the_scripted_reviewer(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """util.py's pack names main.py, which has a finding: the scripted model tells the file
    it reviews from the diff, not from the pack, so util.py's session reports nothing."""
    leak = {
        "severity": "high",
        "category": "bug",
        "file": "pkg/main.py",
        "existing_code": "    return helper(3) * 2",
        "title": "Doubled twice",
        "problem": "helper already doubles",
        "evidence": "helper returns x * scale",
        "suggestion": "drop the * 2",
        "confidence": 0.9,
    }
    reviewer = ScriptedReviewer({"pkg/main.py": [leak]})
    wire.respond("openai", reviewer)
    _repo(repo)
    repo.write("pkg/util.py", UTIL_NEW)
    repo.write("pkg/main.py", "from pkg.util import helper\n\n\ndef run():\n"
               "    return helper(3) * 2\n")  # fmt: skip
    repo.commit("both")

    report = _review(monkeypatch, wire, repo, "--commit", "HEAD", "--fail-on", "critical")
    users = [user for _, user in _main_requests(wire)]
    assert any("Context for pkg/util.py" in u and "pkg/main.py:5" in u for u in users)
    assert [(f["path"], f["title"]) for f in report["findings"]] == [
        ("pkg/main.py", "Doubled twice")
    ]
    assert report["dropped"] == []
    assert reviewer.stages["main"] == 4  # util.py: done at once; main.py: read, comment, done


@pytest.mark.parametrize("console", ["summary", "off"])
def test_a_review_loads_the_index_once(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    console: str,
) -> None:
    """The packs the CLI's estimate counted are the ones the flow sends (handed to its index
    stage); with `--console off` there is no estimate and the index stage makes them."""
    import reviewflow.review.packs as packs

    loads: list[Snapshot] = []

    def counted(snapshot: Snapshot, *args: Any, **kwargs: Any) -> Any:
        loads.append(snapshot)
        return new_side_index(snapshot, *args, **kwargs)

    monkeypatch.setattr(packs, "new_side_index", counted)
    wire.respond("openai", ScriptedReviewer({"pkg/util.py": []}))
    _repo(repo)
    repo.write("pkg/util.py", UTIL_NEW)
    repo.commit("scale")
    _review(monkeypatch, wire, repo, "--commit", "HEAD", "--console", console)
    assert len(loads) == 1
    [(_, user)] = _main_requests(wire)
    assert "pkg/main.py:5 in `def run()`: return helper(3) + gone()" in user
