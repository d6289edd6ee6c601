"""What one relocation or filter task is given: only the reviewed files it reads (the whole
change to every task grew with the square of the change on Dask), under the whole change's
digest, and read exactly as the whole mapping would be."""

from __future__ import annotations

from flows.stages import named_in
from reviewflow.findings import group_candidates
from reviewflow.git.models import FileDiff
from reviewflow.review.records import ChunkResult
from reviewflow.select.reviewed import ReviewedFiles
from tests.findings.conftest import make_candidate


def test_a_relocation_gets_the_files_its_candidates_name_and_groups_them_the_same(
    change: dict[str, FileDiff],
) -> None:
    reviewed = ReviewedFiles.of(list(change.values()))
    names = ["b/app/worker.py", "./app/billing.py", "app/models.py", "app\\billing.py"]
    candidates = [make_candidate(file=name) for name in names]
    chunks = [ChunkResult(path="app/billing.py", candidates=tuple(candidates))]

    needed = named_in(chunks, reviewed)
    given = reviewed.only(needed)
    assert set(given.files) == {"app/billing.py", "app/worker.py"}  # the ghost is not reviewed
    assert given.digest == reviewed.digest  # the stage's cache key is the same
    assert group_candidates(candidates, given.files) == group_candidates(candidates, reviewed.files)
    assert set(reviewed.only(["app/worker.py"]).files) == {"app/worker.py"}
