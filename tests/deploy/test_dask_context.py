"""The code index on a real Dask cluster whose workers cannot see the caller's files (`dask
scheduler` and two `dask worker` processes on loopback, the repository and the reviewflow home
hidden from them, as in test_dask_cluster.py): the caller builds the index of the new side in
the shared store (`<store>/index`, private), the main request carries the context pack, and the
symbol tools of the tool loops and of verification, run on the workers, answer from that index
(each worker loads it, parsing nothing: it is the caller's, not one built again)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from tests.deploy.scenario import BASE, RISKY, SPLIT, use_model
from tests.deploy.test_dask_cluster import Cluster, _can_hide
from tests.flows.reviewer import stage_of
from tests.flows.symbol_reviewer import SymbolReviewer, tool_answers
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

pytestmark = pytest.mark.skipif(
    shutil.which("unshare") is None or not _can_hide(),
    reason="needs a mount namespace (unshare --mount) to hide the caller's files",
)

MAIN = "from app.settings import load\n\n\ndef run(path):\n    return load(path)\n"
LOADED = re.compile(
    r"code index for the symbol tools: (\d+) source files from (\S+) "
    r"\((\d+) parsed, (\d+) reused\)"
)
LOG_WAIT_S = 180.0  # a worker sends its logs to the API in batches, every few seconds


@pytest.fixture
def store() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="reviewflow-store-"))  # outside every hidden directory
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster(prefect_harness: str, tmp_path: Path, rf_home: Path) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="reviewflow-cluster-"))
    env = {
        **os.environ,  # PREFECT_API_URL: the workers report their task runs and logs there
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,  # the workers' own: never a task input
        "PREFECT_LOGGING_LEVEL": "INFO",  # the task runs' info lines reach the API
    }
    cluster = Cluster(base, [tmp_path, rf_home], env)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _index_loads(review_id: str) -> dict[str, list[str]]:
    """The lines the review's task runs logged on loading the index for their symbol tools,
    by task name, read from the Prefect API (the workers' task runs report to it)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterName,
        LogFilter,
        LogFilterFlowRunId,
    )

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[review_id]))
        )
        ids = [run.id for run in runs]
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)))
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)))
    names = {task.id: task.name.rsplit("-", 1)[0] for task in tasks}
    found: dict[str, list[str]] = {}
    for log in logs:
        if LOADED.search(log.message) and log.task_run_id in names:
            found.setdefault(names[log.task_run_id], []).append(log.message)
    return found


def _wait_for_loads(review_id: str, stages: set[str]) -> dict[str, list[str]]:
    """`_index_loads` once every stage of `stages` has one (logs arrive after the review)."""
    deadline = time.monotonic() + LOG_WAIT_S
    while True:
        found = _index_loads(review_id)
        if stages <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


@pytest.mark.timeout(600)  # a cluster, a review with verification: minutes on a busy machine
def test_the_symbol_tools_on_workers_answer_from_the_callers_index_in_the_shared_store(
    repo: GitRepo,
    wire: WireServer,
    cluster: Cluster,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    rf_home: Path,
) -> None:
    from distributed import Client

    repo.write("app/__init__.py", "")
    repo.write("app/settings.py", BASE)
    repo.write("app/main.py", MAIN)
    repo.commit("base")
    repo.write("app/settings.py", RISKY)  # edits load (main.py calls it), adds parse
    repo.commit("read settings")
    model = SymbolReviewer(
        {"app/settings.py": [SPLIT]},
        references={"name": "load", "file_path": "app/settings.py"},
        definition={"name": "parse", "file_path": "app/settings.py"},
    )
    wire.respond("openai", model)
    use_model(monkeypatch, wire)
    monkeypatch.delenv("REVIEWFLOW_MODEL_API_KEY")  # the workers have their own

    with Client(cluster.address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
        client.get_task_stream()  # starts the scheduler's record of where each task ran
        assert set(client.run(os.path.exists, str(repo.root)).values()) == {False}
        out = tmp_path / "out"
        print(f"cluster logs in {cluster.base}")  # shown when the test fails
        code = main(["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off",
                     "--report-dir", str(out), "--task-runner", "dask", "--dask-address",
                     cluster.address, "--shared-store", str(store), "--verify"])  # fmt: skip
        ran = Counter(task["key"].split("-")[0] for task in client.get_task_stream())
        homes = client.run(os.path.exists, str(rf_home / "index"))
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())

    assert code == 1 and report["status"] == "complete"
    [finding] = report["findings"]
    assert (finding["title"], finding["verification"]["score"]) == (SPLIT["title"], 9)
    assert ran["tool_loop"] >= 1 and ran["verify_finding"] >= 1, ran  # ran on the workers
    requests = wire.requests("openai")
    # the main request carries the context pack the caller built
    [first] = [
        r.body["messages"][1]["content"]
        for r in requests
        if stage_of(json.dumps(r.body, ensure_ascii=False)) == "main"
        and len(r.body["messages"]) == 2
    ]
    assert '<untrusted-data label="context pack:' in first
    assert "app/main.py:5 in `def run(path)`: return load(path)" in first
    # the workers' symbol tools answered from the index: real uses and definitions
    [references] = tool_answers(requests, "main", "symbol_references")
    assert "app/main.py:5: return load(path)  [in def run(path); call, confirmed]" in references
    assert "app/main.py:1: from app.settings import load  [in file level; import, confirmed]" in (
        references
    )
    [definition] = tool_answers(requests, "verify_answer", "symbol_definition")
    assert "app/settings.py:9: def parse(text)  [function parse]" in definition
    assert model.offered["verify_answer"] and all(
        "symbol_definition" in names for names in model.offered["verify_answer"]
    )

    # the index lives in the shared store, private; not in the caller's home nor a worker's
    index = store / "index"
    assert sorted(p.name for p in index.iterdir()) == ["index.sqlite"]
    assert (_mode(index), _mode(index / "index.sqlite")) == (0o700, 0o600)
    assert not (rf_home / "index").exists()
    assert set(homes.values()) == {False}
    # each worker session loaded the caller's index and parsed nothing
    loads = _wait_for_loads(report["review_id"], {"tool_loop", "verify"})
    assert set(loads) == {"tool_loop", "verify"}, loads
    for line in (line for lines in loads.values() for line in lines):
        match = LOADED.search(line)
        assert match is not None
        files, where, parsed, reused = match.groups()
        assert (int(files), where, int(parsed), int(reused)) == (3, str(index), 0, 3), line
