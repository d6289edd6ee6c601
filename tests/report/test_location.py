"""Report directories and review IDs (000 §10): naming, collisions, races, output paths."""

from __future__ import annotations

import stat
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from reviewflow.errors import OutputError
from reviewflow.report.location import (
    create_review_dir,
    flatten_repo_path,
    output_path,
    review_dir,
    review_id,
)


@pytest.mark.parametrize(
    ("repository", "flat"),
    [
        ("/home/developer/projects/zadig", "home-developer-projects-zadig"),
        ("/srv/my repo/x.y", "srv-my-repo-x.y"),
        ("/tmp/we\x1bird/../name", "tmp-we-ird-name"),
        ("/data/caf\udce9", "data-caf"),  # a byte that is not UTF-8
        ("/srv/café/日本語", "srv-café-日本語"),  # letters of every script are kept
        ("/srv/cafe\u0301", "srv-café"),  # one spelling of é
        ("/", "repository"),
    ],
)
def test_flattened_repository_path(repository: str, flat: str) -> None:
    assert flatten_repo_path(repository) == flat


def test_a_flattened_path_too_long_for_a_file_name_is_cut_and_told_apart() -> None:
    one, other = flatten_repo_path("/x/" + "é" * 300), flatten_repo_path("/y/" + "é" * 300)
    assert len(one.encode()) <= 200 and one != other
    assert one.startswith("x-éé")


def test_review_id_is_the_utc_second_plus_the_diff_identity() -> None:
    tz = timezone(timedelta(hours=2))
    started = datetime(2026, 11, 30, 14, 5, 9, 999, tzinfo=tz)
    assert review_id(started, "3f2a9c1d") == "20261130T120509Z-3f2a9c1d"
    assert review_id(started, "../x y") == "20261130T120509Z-x-y"
    assert review_id(started, "") == "20261130T120509Z"


def test_default_directory_and_collisions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = [
        review_dir(home, "/home/developer/projects/zadig", "20261130T120000Z-ab") for _ in "123"
    ]
    parent = home / "reports" / "home-developer-projects-zadig"
    assert made == [
        (parent / "20261130T120000Z-ab", "20261130T120000Z-ab"),
        (parent / "20261130T120000Z-ab-2", "20261130T120000Z-ab-2"),
        (parent / "20261130T120000Z-ab-3", "20261130T120000Z-ab-3"),
    ]
    assert stat.S_IMODE(made[0][0].stat().st_mode) == 0o700


def test_concurrent_reviews_in_the_same_second_get_distinct_directories(tmp_path: Path) -> None:
    results: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        _, rid = create_review_dir(tmp_path / "r", "20261130T120000Z-ab")
        with lock:
            results.append(rid)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    suffixes = ["", *(f"-{n}" for n in range(2, 9))]
    assert sorted(results) == sorted(f"20261130T120000Z-ab{s}" for s in suffixes)


def test_report_dir_setting_is_used_as_given(tmp_path: Path) -> None:
    target = tmp_path / "ci" / "out"
    assert review_dir(tmp_path / "home", "/repo", "rid", str(target)) == (target, "rid")
    assert target.is_dir()
    assert review_dir(tmp_path / "home", "/repo", "rid", str(target)) == (target, "rid")


def test_no_directory_is_created_when_no_report_goes_there(tmp_path: Path) -> None:
    home, target = tmp_path / "home", tmp_path / "ci" / "out"
    assert review_dir(home, "/repo", "rid", create=False) == (home / "reports", "rid")
    assert review_dir(home, "/repo", "rid", str(target), create=False) == (target, "rid")
    assert list(tmp_path.iterdir()) == []


def test_unusable_report_directory_is_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create report directory"):
        review_dir(tmp_path, "/repo", "rid", str(blocker / "sub"))
    with pytest.raises(OutputError, match="cannot create report directory"):
        create_review_dir(blocker, "rid")


def test_output_paths(tmp_path: Path) -> None:
    directory = tmp_path / "review"
    assert output_path("review-report.json", directory) == str(directory / "review-report.json")
    assert output_path("sub/r.md", directory) == str(directory / "sub" / "r.md")
    assert output_path("/abs/r.sarif", directory) == "/abs/r.sarif"
    assert output_path("-", directory) == "-"
    assert output_path(None, directory) is None
    assert output_path("", directory) is None
    assert output_path("  ", directory) is None


def test_review_ids_sort_in_time() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ids = [review_id(start + timedelta(seconds=s), "ff") for s in (59, 60, 3600)]
    assert ids == sorted(ids)
