"""The review flow runs every stage as a Prefect task run and publishes its artifacts."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.report.artifacts import artifact_key
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_review_e2e import SPLIT, _repo
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

STAGES = {
    "prepare_review",
    "chunk_files",
    # not estimate_cost: a CLI review hands the flow the estimate it printed (tests/cli/test_budget)
    "identify_snapshot",
    "plan",
    "tool_loop",  # its model requests inside it: no task runs of their own
    "relocate",
    "review_filter",
    "finalize",
    "load_dismissed",
    "silence",
    "localize",
    "report",
}


async def _recorded() -> tuple[set[str], list[Any]]:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        runs = await client.read_task_runs()
        artifacts = await client.read_artifacts()
    return {run.name.rsplit("-", 1)[0] for run in runs}, artifacts


@pytest.mark.usefixtures("prefect_harness")
def test_every_stage_is_a_task_run_and_artifacts_are_published(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT], "app/big.py": []}))
    _repo(repo.root)
    big = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(30))
    repo.write("app/big.py", big)  # 60 changed lines: this file is planned
    repo.commit("big")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    flags = ["--from", "HEAD~2", "--to", "HEAD", "--no-cache"]
    assert main(["review", "--repo", str(repo.root), *flags]) == 1

    names: set[str] = set()
    artifacts: list[Any] = []
    key = artifact_key(str(repo.root), "range")
    table = artifact_key(str(repo.root), "range-findings")
    for _ in range(100):  # task runs reach the API asynchronously
        names, artifacts = asyncio.run(_recorded())
        if names >= STAGES and {key, table} <= {a.key for a in artifacts}:
            break
        time.sleep(0.1)
    assert names >= STAGES
    published = {a.key: a for a in artifacts if a.key in (key, table)}
    assert set(published) == {key, table}
    assert "high | 1" in str(published[key].data)
    assert "Lines without" in str(published[table].data)
    for artifact in artifacts:
        assert TEST_KEY not in str(artifact.data)


@pytest.mark.usefixtures("prefect_harness")
def test_stdin_diff_is_reviewed_and_reported_as_stdin(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    _repo(repo.root)
    diff = repo.git("show", "--format=", "HEAD").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(diff)))
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = tmp_path / "out"
    flags = ["--diff", "-", "--report-dir", str(out), "--console", "off"]
    assert main(["review", "--repo", str(repo.root), *flags]) == 1

    report = json.loads((out / "review-report.json").read_text())
    assert (report["metadata"]["mode"], report["metadata"]["diff_file"]) == ("stdin", None)
    assert [f["path"] for f in report["findings"]] == ["app/settings.py"]


async def _review_runs() -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.client.schemas.sorting import FlowRunSort

    async with get_client() as client:
        flows = FlowFilter(name=FlowFilterName(any_=["review"]))
        return await client.read_flow_runs(flow_filter=flows, sort=FlowRunSort.START_TIME_DESC)


@pytest.mark.usefixtures("prefect_harness")
def test_the_front_half_runs_once_and_only_its_summary_is_stored(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The CLI reads the change once and hands it to the flow, whose stored parameters hold
    only its summary; a run with none handed (a deployment's) reads it in its first task."""
    import reviewflow.select.scope as scope_module
    from flows.review_flow import run_review
    from reviewflow.config import Config
    from reviewflow.request import ReviewRequest

    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    _repo(repo.root)
    reads: list[str] = []
    collect = scope_module.collect

    def counted(request: ReviewRequest, *args: Any) -> Any:
        reads.append(request.repo)
        return collect(request, *args)

    monkeypatch.setattr(scope_module, "collect", counted)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    flags = ["--commit", "HEAD", "--console", "off", "--report-dir", str(tmp_path / "out")]
    assert main(["review", "--repo", str(repo.root), "--no-cache", *flags]) == 1
    assert reads == [str(repo.root)]

    [run, *_] = asyncio.run(_review_runs())
    assert run.parameters["prepared"] == {"kept": 1, "excluded": 0}
    assert "split" not in json.dumps(run.parameters)  # no line of the change is stored

    reads.clear()
    request = ReviewRequest.from_flags(str(repo.root), commit="HEAD", home=str(tmp_path / "h"))
    endpoint = {"name": "test-model", "endpoint": wire.base_url("openai"), "api_key": TEST_KEY}
    config = Config.model_validate({"model": endpoint, "output": {"report_dir": str(tmp_path)}})
    done = run_review(request, config)
    assert reads == [str(repo.root)] and [f.title for f in done.outcome.findings] == [
        SPLIT["title"]
    ]
