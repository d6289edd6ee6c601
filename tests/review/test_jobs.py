"""File jobs: chunks on hunk boundaries, a huge hunk split, the rule, the plan threshold."""

from __future__ import annotations

from pathlib import Path

from reviewflow.anchors import tag
from reviewflow.config import ReviewSettings
from reviewflow.review.jobs import chunk_file, file_jobs
from reviewflow.review.plan import plan_file
from reviewflow.review.tokens import estimate_tokens
from tests.gitutil import GitRepo
from tests.review.helpers import commit_scope, sending, simple_job
from tests.wire_server import Text, WireServer


def _lines(n: int, word: str = "value") -> str:
    return "".join(f"{word}_{i} = compute({i})\n" for i in range(n))


def test_file_jobs_carry_path_status_counts_rule_and_language(repo: GitRepo, rf_home: Path) -> None:
    repo.write("pkg/core.py", _lines(5))
    repo.commit("base")
    repo.write("pkg/core.py", _lines(5).replace("value_2", "changed_2"))
    sha = repo.commit("edit")
    jobs = file_jobs(commit_scope(repo, rf_home, sha), ReviewSettings(), "de-DE")
    assert len(jobs) == 1
    job = jobs[0]
    assert (job.path, job.status, job.changed_lines, job.language) == (
        "pkg/core.py",
        "modified",
        2,
        "de-DE",
    )
    assert job.rule_label == "system:python" and job.rule
    assert len(job.chunks) == 1
    text = job.chunks[0].text
    assert text.startswith("@@ -1,5 +1,5 @@")
    context = [
        f"{tag(n, f'value_{i} = compute({i})')}  value_{i} = compute({i})"
        for n, i in ((1, 0), (2, 1))
    ]
    assert text.split("\n")[1:6] == [  # every new-side line behind its tag; deleted ones padded
        *context,
        "       -value_2 = compute(2)",
        f"{tag(3, 'changed_2 = compute(2)')} +changed_2 = compute(2)",
        f"{tag(4, 'value_3 = compute(3)')}  value_3 = compute(3)",
    ]
    assert tag(3, "changed_2 = compute(2)") == "L3#785"  # stable across runs and machines
    assert job.chunks[0].changed_lines == 2


def test_hunks_are_packed_into_chunks_on_hunk_boundaries(repo: GitRepo, rf_home: Path) -> None:
    base = _lines(400)
    repo.write("big.py", base)
    repo.commit("base")
    edited = base.split("\n")
    for at in range(10, 400, 40):  # ten separate hunks
        edited[at] = f"edited_{at} = 0"
    repo.write("big.py", "\n".join(edited))
    sha = repo.commit("edit")
    settings = ReviewSettings(max_chunk_tokens=1000)
    (job,) = file_jobs(commit_scope(repo, rf_home, sha), settings, "en-US")
    assert len(job.chunks) > 1
    assert [c.index for c in job.chunks] == list(range(len(job.chunks)))
    assert all(c.count == len(job.chunks) for c in job.chunks)
    assert sum(c.changed_lines for c in job.chunks) == job.changed_lines == 20
    for chunk in job.chunks:
        assert estimate_tokens(chunk.text) <= 400  # 40% of max_chunk_tokens
        assert chunk.text.startswith("@@ ") and "(part" not in chunk.text  # whole hunks only
    every_hunk = "\n".join(c.text for c in job.chunks)
    assert every_hunk.count("@@ -") == 10


def test_a_huge_hunk_is_split_into_parts(repo: GitRepo, rf_home: Path) -> None:
    repo.write("gen.py", "")
    repo.commit("base")
    repo.write("gen.py", _lines(600, "generated"))
    sha = repo.commit("add 600 lines")
    (job,) = file_jobs(
        commit_scope(repo, rf_home, sha), ReviewSettings(max_chunk_tokens=1000), "en"
    )
    assert len(job.chunks) >= 10
    assert sum(c.changed_lines for c in job.chunks) == 600
    first, second = job.chunks[0].text, job.chunks[1].text
    assert first.startswith("@@ -0,0 +1,") and f"(part 1/{len(job.chunks)})" in first
    next_line = int(first.splitlines()[-1].split("#")[0].removeprefix("L")) + 1
    assert second.startswith(f"@@ -0,0 +{next_line},") and "(part 2/" in second
    assert all(estimate_tokens(c.text) <= 400 for c in job.chunks)


def test_a_minified_line_is_cut_in_the_diff() -> None:
    from reviewflow.git.models import FileDiff, FileStatus, Hunk

    hunk = Hunk(0, 0, 1, 1, "", ("+" + "x" * 50_000,), 1, 0)
    diff = FileDiff("min.js", None, FileStatus.ADDED, hunks=(hunk,))
    (chunk,) = chunk_file(diff, 4800)
    assert "[line cut: 50000 chars]" in chunk.text and len(chunk.text) < 2200


def test_plan_only_for_files_with_at_least_50_changed_lines(wire: WireServer) -> None:
    wire.script("anthropic", [Text("Check the retry loop in fetch().")])
    with sending(wire, "anthropic") as send:
        small = plan_file(simple_job(changed=49), send)
        large = plan_file(simple_job(changed=50), send)
    assert small.guidance is None and small.records == () and small.complete
    assert large.guidance == "Check the retry loop in fetch()." and large.complete
    (record,) = large.records
    assert (record.stage, record.path, record.status) == ("plan", "app.py", "ok")
    (request,) = wire.requests()
    assert "tools" not in request.body
    assert "Check error handling." not in str(request.body["system"])  # rule in the user turn
    assert "Check error handling." in str(request.body["messages"])
    wire.assert_done()
