"""The symbol tools in verification (`--verify`), through the CLI on a real repository and the
scripted model server: the verifier is offered `symbol_definition` and `symbol_references`
beside the context tools, and its call is answered from the code index of the new side; with
`--context off` verification offers the three context tools and its requests are as before the
symbol tools (no symbol tool anywhere in the review)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.findings.answers import PROMPTS
from reviewflow.prompts import render
from tests.flows.reviewer import stage_of
from tests.flows.symbol_reviewer import SymbolReviewer, tool_answers
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

UTIL = 'def helper(x, scale=2):\n    """Scale x."""\n    return x * scale\n'
MAIN = "from pkg.util import helper\n\n\ndef run():\n    return helper(3)\n"
MAIN_NEW = "from pkg.util import helper\n\n\ndef run(items):\n    return helper(items[0])\n"
FINDING = {
    "severity": "high",
    "category": "correctness",
    "file": "pkg/main.py",
    "existing_code": "    return helper(items[0])",
    "title": "Empty items crash run",
    "problem": "IndexError when items is empty",
    "evidence": "items[0] is read unchecked",
    "suggestion": "check items first",
    "confidence": 0.9,
}
CONTEXT_TOOLS = ["file_read", "code_search", "file_find"]
SYMBOL_TOOLS = ["symbol_definition", "symbol_references"]


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, repo: GitRepo, *flags: str
) -> dict[str, Any]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    assert main([*argv, "--report-dir", str(out), "--verify", *flags]) == 1
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())
    return report


def _answer_systems(wire: WireServer, since: int) -> set[str]:
    """The system prompts of the verification answers sent since request `since`."""
    return {
        record.body["messages"][0]["content"]
        for record in wire.requests("openai")[since:]
        if stage_of(json.dumps(record.body, ensure_ascii=False)) == "verify_answer"
    }


def test_the_verifier_asks_the_symbol_tools_and_off_offers_none(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = SymbolReviewer(
        {"pkg/main.py": [FINDING]},
        definition={"name": "helper", "file_path": "pkg/main.py"},
    )
    wire.respond("openai", model)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/util.py", UTIL)
    repo.write("pkg/main.py", MAIN)
    repo.commit("base")
    repo.write("pkg/main.py", MAIN_NEW)
    repo.commit("take items")

    report = _review(monkeypatch, wire, repo)
    [finding] = report["findings"]
    assert finding["verification"] == {"score": 9, "questions": 2}
    assert model.offered["verify_answer"] == [CONTEXT_TOOLS + SYMBOL_TOOLS] * 2
    [answer] = tool_answers(wire.requests("openai"), "verify_answer", "symbol_definition")
    assert "pkg/util.py:1: def helper(x, scale=2)  [function helper]\n    doc: Scale x." in answer
    calls = [
        call
        for record in report["process"]
        if record["stage"] == "verify_answer"
        for call in record["tool_calls"]
    ]
    assert [(c["name"], c["status"]) for c in calls] == [
        ("symbol_definition", "ok"),  # the second question's same call: from the session's cache
        ("symbol_definition", "cached"),
    ]
    [system] = _answer_systems(wire, 0)
    assert "symbol_definition says where a name is defined" in system

    seen = len(wire.requests("openai"))
    offered = {stage: len(names) for stage, names in model.offered.items()}
    report = _review(monkeypatch, wire, repo, "--context", "off", "--no-cache")
    assert report["findings"][0]["verification"] == {"score": 9, "questions": 2}
    assert model.offered["verify_answer"][offered["verify_answer"] :] == [CONTEXT_TOOLS] * 2
    assert all(names == [*CONTEXT_TOOLS, "code_comment", "task_done"]
               for names in model.offered["main"][offered["main"] :])  # fmt: skip
    # the verifier, offered no symbol tool, read the file as before the symbol tools
    assert tool_answers(wire.requests("openai")[seen:], "verify_answer", "file_read")
    assert _answer_systems(wire, seen) == {
        render(PROMPTS, "verify_answer_system.j2", symbols=False)
    }
    assert "symbol" not in render(PROMPTS, "verify_answer_system.j2", symbols=False)
