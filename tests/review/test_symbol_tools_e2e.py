"""The symbol tools in whole reviews through the CLI, on real repositories and the scripted
model server: the model asks where a changed function is used and defined (a commit review and
a workspace review with an untracked caller); with `--context off` they are not offered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flows.cli.main import main
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.gitutil import GitRepo
from tests.review.helpers import tool_names
from tests.wire_server import TEST_KEY, Call, RecordedRequest, Reply, ToolCalls, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

UTIL = "def helper(x):\n    return x * 2\n"
UTIL_NEW = 'def helper(x, scale=2):\n    """Scale x."""\n    return x * scale\n'
MAIN = "from pkg.util import helper\n\n\ndef run():\n    return helper(3)\n"
TODAY = ["file_read", "code_search", "file_find", "code_comment", "task_done"]


class SymbolAsker:
    """Main stage: asks both symbol tools about `helper` when they are offered, then finishes;
    every other stage as the scripted reviewer answers it."""

    def __init__(self) -> None:
        self.inner = ScriptedReviewer({})
        self.offered: list[list[str]] = []

    def __call__(self, record: RecordedRequest) -> Reply:
        if stage_of(json.dumps(record.body, ensure_ascii=False)) != "main":
            return self.inner(record)
        names = tool_names("openai", record.body)
        self.offered.append(names)
        asked = any(m["role"] == "tool" for m in record.body["messages"])
        if "symbol_references" not in names or asked:
            return ToolCalls(Call("task_done", {}))
        return ToolCalls(
            Call("symbol_references", {"name": "helper", "file_path": "pkg/util.py"}),
            Call("symbol_definition", {"name": "helper", "file_path": "pkg/main.py"}),
        )


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, repo: GitRepo, *flags: str
) -> dict[str, Any]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    argv = ["review", "--repo", str(repo.root), "--console", "summary", "--report-dir", str(out)]
    assert main([*argv, *flags]) == 0
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())
    return report


def _tool_answers(wire: WireServer) -> str:
    """Every tool answer the model was sent."""
    return "\n".join(
        message["content"]
        for record in wire.requests("openai")
        for message in record.body["messages"]
        if message["role"] == "tool"
    )


def _base(repo: GitRepo) -> None:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/util.py", UTIL)
    repo.write("pkg/main.py", MAIN)
    repo.commit("base")


def test_the_model_asks_the_symbol_tools_in_a_commit_review(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = SymbolAsker()
    wire.respond("openai", model)
    _base(repo)
    repo.write("pkg/util.py", UTIL_NEW)
    repo.commit("scale")

    _review(monkeypatch, wire, repo, "--commit", "HEAD")
    assert model.offered[0] == [*TODAY[:3], "symbol_definition", "symbol_references", *TODAY[3:]]
    texts = _tool_answers(wire)
    assert "2 references to 'helper' (defined in pkg/util.py)" in texts
    assert "pkg/main.py:1: from pkg.util import helper  [in file level; import, confirmed]" in texts
    assert "pkg/main.py:5: return helper(3)  [in def run(); call, confirmed]" in texts
    assert "pkg/util.py:1: def helper(x, scale=2)  [function helper]\n    doc: Scale x." in texts


def test_a_workspace_review_answers_from_the_working_tree_and_off_offers_none(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = SymbolAsker()
    wire.respond("openai", model)
    _base(repo)
    repo.write("pkg/util.py", UTIL_NEW)  # uncommitted
    repo.write(
        "pkg/fresh.py", "from pkg.util import helper\n\n\ndef fresh():\n    return helper(9)\n"
    )

    _review(monkeypatch, wire, repo)
    texts = _tool_answers(wire)
    assert "pkg/fresh.py:5: return helper(9)  [in def fresh(); call, confirmed]" in texts
    assert "pkg/util.py:1: def helper(x, scale=2)" in texts  # the uncommitted signature

    seen = len(model.offered)
    _review(monkeypatch, wire, repo, "--context", "off", "--no-cache")
    assert model.offered[seen:] and all(names == TODAY for names in model.offered[seen:])
