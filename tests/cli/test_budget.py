"""Cost estimates and the budget through the CLI: the estimate in the preview (text and JSON),
on stderr at a review's start and in its JSON report; a review stopped by `--max-tokens` midway
(partial findings, files incomplete with reason `budget`, exit 2, the console line);
`--max-cost` without a known price."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, RecordedRequest, Reply, ToolCalls, WireServer, WireUsage

FILES = ("a.py", "b.py", "c.py")
LEAK = {
    "severity": "high",
    "category": "correctness",
    "file": "a.py",
    "existing_code": "    return open(x).read()",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use with open(x) as handle",
    "confidence": 0.9,
}
USAGE = WireUsage(prompt=2000, completion=10)  # what the scripted model says each answer used


@pytest.fixture
def three(repo: GitRepo) -> GitRepo:
    for path in FILES:
        repo.write(path, "def f(x):\n    return x\n")
    repo.commit("base")
    repo.write("a.py", "def f(x):\n    return open(x).read()\n")
    repo.write("b.py", "def f(x):\n    return x + 1\n")
    repo.write("c.py", "def f(x):\n    return x - 1\n")
    repo.commit("change")
    return repo


def _preview(repo: GitRepo, tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "preview.json"
    args = ["review", "--preview", "--repo", str(repo.root), "--commit", "HEAD"]
    code = main([*args, "--json", str(out), *flags])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_preview_estimates_each_file_and_the_total_with_a_bundled_price(
    three: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _preview(three, tmp_path, "--model", "gpt-4o-mini", "--max-tokens", "200k")
    assert code == 0
    estimate = doc["estimate"]
    assert [f["path"] for f in estimate["files"]] == list(FILES)
    for item in estimate["files"]:  # one chunk each: a read, then comments and the end
        assert item["chunks"] == 1 and item["requests"] == pytest.approx(2.0, abs=0.15)
        assert 1500 < item["prompt_tokens"] < 10_000 and item["cost"] > 0
    assert estimate["requests"] == pytest.approx(
        sum(f["requests"] for f in estimate["files"]), abs=0.15
    )
    assert estimate["price"]["source"] == "bundled" and estimate["price"]["currency"] == "USD"
    assert estimate["budget"] == {
        "max_tokens": 200_000,
        "max_cost": None,
        "fits": True,
        "fits_high": True,
    }
    text = capsys.readouterr().out
    assert "Estimated cost" in text and re.search(r"^  total\s+6\.\d", text, re.M)
    assert "fits the budget of 200k tokens" in text


def test_preview_without_a_price_says_so_and_a_small_budget_does_not_fit(
    three: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _preview(three, tmp_path, "--model", "house-llm", "--max-tokens", "2000")
    assert code == 0
    assert doc["estimate"]["price"] is None and doc["estimate"]["cost"] is None
    assert doc["estimate"]["budget"]["fits"] is False
    text = capsys.readouterr().out
    assert "cost unknown (no price for model 'house-llm': set model.price)" in text
    assert "does NOT fit the budget of 2k tokens" in text
    assert re.search(
        r"^  a\.py\s+2\.1\s+\S+\s+(?:\S+\s+)?\S+\s+n/a$", text, re.M
    )  # context: optional


def test_max_cost_without_a_known_price_is_one_line_and_exit_2(
    three: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _preview(three, tmp_path, "--model", "house-llm", "--max-cost", "2")
    assert (code, doc) == (2, {})
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "review.max_cost (2) needs the price of model 'house-llm'" in err[0]
    code, doc = _preview(three, tmp_path, "--model", "house-llm", "--max-cost", "2", "--json", "-")
    assert code == 2


class Metered(ScriptedReviewer):
    """The scripted reviewer, each answer reporting `USAGE`."""

    def __call__(self, record: RecordedRequest) -> Reply:
        reply = super().__call__(record)
        if isinstance(reply, ToolCalls):
            return ToolCalls(*reply.calls, text=reply.text, usage=USAGE)
        return reply


def _review(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, *flags: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    args += ["--report-dir", str(out), "--no-progress", "--concurrency", "1", *flags]
    code = main(args)
    return code, json.loads((out / "review-report.json").read_text())


@pytest.mark.usefixtures("prefect_harness")
def test_a_budget_stops_the_review_midway_and_keeps_what_was_found(
    three: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each answer reports 2,000 prompt tokens; a budget of 9k lets about four requests go
    (a.py: read, comment, done; then some of b.py's): a.py's finding is kept, the files the
    budget stopped are incomplete with reason `budget`, and the gate says exit 2."""
    reviewer = Metered({"a.py": [LEAK], "b.py": [], "c.py": []})
    wire.respond("openai", reviewer)
    code, report = _review(three, wire, monkeypatch, "--max-tokens", "9k")

    assert code == 2
    jsonschema.validate(report, report_schema())
    assert report["status"] == "incomplete"
    assert [f["title"] for f in report["findings"]] == ["File handle never closed"]
    budget = report["budget"]
    assert budget["reached"] and budget["refused_requests"] >= 1 and budget["max_tokens"] == 9000
    incomplete = {item["path"]: item["reason"] for item in report["incomplete_files"]}
    assert "c.py" in incomplete and set(incomplete.values()) == {"budget"}
    assert budget["files_finished"] == 3 - len(incomplete)
    sent = len(wire.requests())
    assert 3 <= sent < 8  # a whole review sends 8: a.py 3 + filter, b.py 2, c.py 2
    assert report["usage"]["requests"] == sent
    assert budget["spent_tokens"] == report["usage"]["total_tokens"] <= 9000
    refused = [r for r in report["process"] if r["status"] == "not_sent"]
    assert refused and all(r["attempts"] == 0 and "budget of 9k" in r["error"] for r in refused)
    assert report["errors"] == []  # a refusal is no failed request
    assert report["estimate"]["requests"] > 0 and report["usage"]["cost"] > 0
    err = capsys.readouterr().err
    assert re.search(r"^reviewflow: estimate: ~6 requests, .* does NOT fit the budget", err, re.M)
    finished = budget["files_finished"]
    line = f"review incomplete: budget of 9k tokens reached after {finished} of 3 files"
    assert f"reviewflow: {line}" in err

    # Again with room: what finished comes from the cache, only the stopped files are paid.
    code, again = _review(three, wire, monkeypatch, "--max-tokens", "1M")
    assert code == 1 and again["status"] == "complete" and "incomplete_files" not in again
    paid = [r for r in again["process"] if not r["reused"]]
    assert paid and {r["path"] for r in paid} <= set(incomplete)
    assert again["usage"]["requests"] == len(wire.requests()) - sent == len(paid)
    assert [f["title"] for f in again["findings"]] == ["File handle never closed"]


@pytest.mark.usefixtures("prefect_harness")
def test_a_budget_that_fits_changes_nothing_and_the_report_holds_the_estimate(
    three: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", Metered({"a.py": [LEAK], "b.py": [], "c.py": []}))
    code, report = _review(three, wire, monkeypatch, "--max-tokens", "1M")
    assert code == 1 and report["status"] == "complete"
    jsonschema.validate(report, report_schema())
    assert report["budget"]["reached"] is False and "incomplete_files" not in report
    assert report["usage"]["requests"] == len(wire.requests()) == 8
    estimate = report["estimate"]
    assert estimate["files"][0]["path"] == "a.py" and estimate["budget"]["fits"] is True
    assert estimate["requests"] == pytest.approx(6, abs=0.5)  # 2 main each (+ a filter share)


async def _flow_run_ids() -> set[str]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return {str(run.id) for run in await client.read_flow_runs()}


async def _task_names(flow_run_id: str) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async with get_client() as client:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    return [run.name.rsplit("-", 1)[0] for run in runs]


def _stages_of_the_next_review(review: Any) -> tuple[Any, list[str]]:
    """What `review()` returned and the names of its flow run's task runs (recorded in the API
    asynchronously: read until the last stage, `report`, is there)."""
    import asyncio
    import time

    before = asyncio.run(_flow_run_ids())
    result = review()
    (flow_run_id,) = asyncio.run(_flow_run_ids()) - before
    names: list[str] = []
    for _ in range(100):
        names = asyncio.run(_task_names(flow_run_id))
        if "report" in names:
            break
        time.sleep(0.1)
    assert "report" in names
    return result, names


@pytest.mark.usefixtures("prefect_harness")
def test_a_cli_review_estimates_once_and_hands_its_estimate_to_the_flow(
    three: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The CLI's line and the report's `estimate` are one computation: the flow's
    `estimate_cost` stage does not run; with `--console off` (no line) the flow makes it."""
    wire.respond("openai", Metered({"a.py": [LEAK], "b.py": [], "c.py": []}))
    (code, report), names = _stages_of_the_next_review(lambda: _review(three, wire, monkeypatch))
    assert code == 1 and "estimate_cost" not in names and "chunk_files" in names
    jsonschema.validate(report, report_schema())
    err = capsys.readouterr().err
    assert f"estimate: ~{report['estimate']['requests']:.0f} requests, " in err
    assert report["estimate"]["price"]["source"] == "bundled"

    quiet = lambda: _review(three, wire, monkeypatch, "--console", "off", "--no-cache")  # noqa: E731
    (code, again), names = _stages_of_the_next_review(quiet)
    assert code == 1 and names.count("estimate_cost") == 1
    assert again["estimate"] == report["estimate"]  # the same estimate either way
