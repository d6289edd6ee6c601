"""`--context on --context off`: the same cases reviewed with the context pack and symbol tools
and without, each run with its own cassettes and results, both in one table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality.cases import Case, Golden
from bench.quality.harness import CaseResult
from bench.quality.judge import Verdict
from bench.quality.results import Prices, ablation_markdown, run_json
from bench.quality.review import ReviewRun
from bench.quality.run import main
from bench.quality.score import count
from tests.quality.tiny import TinyModel, build
from tests.review.helpers import tool_names
from tests.wire_server import TEST_KEY, WireServer

META = {
    "label": "t",
    "mode": "live",
    "cases_file": "cases.json",
    "source": {"benchmark": "b"},
    "review_model": "openai:m",
    "judge_model": "openai:j",
    "judge_prompts": "abc",
}


def _result(caught: bool) -> CaseResult:
    case = Case("c1", "file:///r", (Golden("g0"),), base="a" * 40, head="b" * 40)
    review = ReviewRun(1, 2.0, {"findings": [{}], "usage": {"prompt_tokens": 10}}, "")
    verdicts = [Verdict(0, 0, caught, 0.9, "", "judge")]
    return CaseResult(case, review=review, verdicts=verdicts, counts=count(1, 1, verdicts))


def test_both_modes_are_one_table_row_by_row_then_each_total() -> None:
    runs = {
        "on": run_json([_result(True)], Prices(), META | {"context": "on"}),
        "off": run_json([_result(False)], Prices(), META | {"context": "off"}),
    }
    lines = ablation_markdown(runs).splitlines()
    assert lines[0] == "# Quality run `t`: context on vs off"
    assert lines[4].startswith("| case | context | golden | caught |")
    rows = [line for line in lines if line.startswith("| c1 ") or "**total**" in line]
    assert [row.split(" | ")[:4] for row in rows] == [
        ["| c1", "on", "1", "1"],
        ["| c1", "off", "1", "0"],
        ["| **total**", "on", "1", "1"],
        ["| **total**", "off", "1", "0"],
    ]
    assert "| 100.0% | 100.0% | 100.0% |" in rows[0] and "| 0.0% | 0.0% |" in rows[1]


def _flags(root: Path, wire: WireServer, *extra: str) -> list[str]:
    return [
        "--cases",
        str(root / "cases.json"),
        "--case",
        "tiny-window",
        "--protocol",
        "openai",
        "--model",
        "test-model",
        "--endpoint",
        wire.base_url("openai"),
        "--cache-dir",
        str(root / "cache"),
        "--cassettes",
        str(root / "cassettes"),
        "--out",
        str(root / "out"),
        *extra,
    ]


@pytest.mark.usefixtures("prefect_harness")
def test_a_live_run_reviews_each_case_with_context_on_and_off(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path)
    wire.respond("openai", TinyModel())
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    assert main(_flags(tmp_path, wire, "--context", "on", "--context", "off")) == 0

    main_requests = [r for r in wire.requests() if "code_comment" in tool_names("openai", r.body)]
    offered = [("symbol_definition" in tool_names("openai", r.body)) for r in main_requests]
    assert offered and offered[0] and not offered[-1]  # the on run first, then the off run
    for mode in ("on", "off"):
        assert (tmp_path / "cassettes" / f"context-{mode}" / "tiny-window.json").is_file()
        data = json.loads((tmp_path / "out" / f"context-{mode}" / "results.json").read_text())
        assert data["context"] == mode and data["total"]["scored"] == 1
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| tiny-window | on | 1 | 1 |" in table and "| tiny-window | off | 1 | 1 |" in table
    assert "| **total** | on |" in table and "| **total** | off |" in table

    sent = len(wire.requests())  # replayed: both modes scored again from their cassettes
    flags = _flags(tmp_path, wire, "--context", "off", "--context", "on", "--replay")
    assert main(flags) == 0 and len(wire.requests()) == sent
