"""The review flow runs the front-half stages as Prefect tasks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from reviewflow.config import Config
from reviewflow.request import ReviewRequest
from tests.gitutil import GitRepo


@pytest.mark.usefixtures("prefect_harness")
def test_review_flow_runs_collect_and_select_as_tasks(repo: GitRepo, rf_home: Path) -> None:
    from prefect.client.orchestration import get_client

    from flows.review import review

    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "x = 2\n")
    repo.write("notes.txt", "hello\n")
    state = review(
        ReviewRequest.from_flags(str(repo.root), home=str(rf_home)), Config(), return_state=True
    )
    assert state.is_completed()
    doc = state.result()
    assert [f["path"] for f in doc["files"]] == ["app.py"]
    assert doc["excluded_files"][0]["reason"] == "unsupported_ext"

    async def task_names() -> set[str]:
        async with get_client() as client:
            runs = await client.read_task_runs()
        return {run.name.rsplit("-", 1)[0] for run in runs}

    names: set[str] = set()
    for _ in range(50):  # task runs reach the API asynchronously
        names = asyncio.run(task_names())
        if {"collect_diff", "select_files"} <= names:
            break
        time.sleep(0.1)
    assert {"collect_diff", "select_files"} <= names


@pytest.mark.usefixtures("prefect_harness")
def test_stdin_diff_saved_by_the_cli_is_still_reported_as_stdin(
    repo: GitRepo, rf_home: Path, tmp_path: Path
) -> None:
    from flows.review import review

    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    repo.write("app.py", "x = 2\n")
    saved = tmp_path / "stdin.diff"
    saved.write_bytes(repo.git("diff").encode())
    request = ReviewRequest.from_flags(str(repo.root), diff_source="-", home=str(rf_home))
    doc = review(request.model_copy(update={"stdin_copy": str(saved)}), Config())
    assert (doc["metadata"]["mode"], doc["metadata"]["diff_file"]) == ("stdin", None)
    assert [f["path"] for f in doc["files"]] == ["app.py"]
