"""Differential check against Git: we read what `git apply --numstat` reads, or refuse.

For many generated diffs and many corruptions of them, the parser either refuses the input or
its files and added/removed counts equal what `git apply --numstat -z` reports for the same
bytes at the strip level the parser chose. Clean inputs must also read as what they say.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reviewflow.errors import DiffParseError
from reviewflow.git.parse import read_diff
from tests.git.diffgen import Generated, colourize, corrupt, generate
from tests.git.gitapply import git_numstat, our_counts

FIXTURES = Path(__file__).parent.parent / "data" / "diff-fixtures"


def _check(data: bytes, cwd: Path) -> bool:
    """True when we read `data` (and Git agrees), False when we refuse it."""
    try:
        parsed = read_diff(data)
    except DiffParseError as err:
        assert str(err).startswith("malformed diff at line ") and "\n" not in str(err)
        return False
    assert git_numstat(data, parsed.strip, cwd) == our_counts(parsed.files), data
    return True


def test_generated_diffs_and_their_corruptions_agree_with_git(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(400):
        diff: Generated = generate(rng)
        parsed = read_diff(diff.data)
        assert (our_counts(parsed.files), parsed.strip) == (diff.counts, diff.strip), diff.text
        assert _check(diff.data, tmp_path)
        for _ in range(3):
            damaged = corrupt(rng, diff.text).encode("utf-8", "surrogateescape")
            outcomes["read" if _check(damaged, tmp_path) else "refused"] += 1
    assert min(outcomes.values()) > 300, outcomes


def test_coloured_diffs_are_refused_with_the_fix(tmp_path: Path) -> None:
    rng = random.Random(7)
    for _ in range(40):
        data = colourize(generate(rng).text).encode("utf-8", "surrogateescape")
        with pytest.raises(DiffParseError, match=r"ANSI colour codes .*--no-color"):
            read_diff(data)
        assert git_numstat(data, 1, tmp_path) is None and git_numstat(data, 0, tmp_path) is None


def _fixtures() -> list[Path]:
    skip = {"LICENSE", "SOURCES.md"}
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name not in skip)


def test_public_fixture_sets_read_as_git_reads_them(tmp_path: Path) -> None:
    fixtures = _fixtures()
    assert len(fixtures) == 95
    read = sum(_check(path.read_bytes(), tmp_path) for path in fixtures)
    assert read >= 50, read  # the rest: context/ed/normal diffs, raw/numstat output, corrupt
