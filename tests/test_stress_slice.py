"""The stress matrix (`-m stress`) is left out by default, and CI's `--stress-slice K/N` slices
partition it: every stress test runs in exactly one of N consecutive commits' slices."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = "tests/server/test_stop_warm.py"


def _collected(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "--collect-only", "-q", *args, MODULE],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return {line.strip() for line in done.stdout.splitlines() if line.startswith(MODULE + "::")}


def test_the_stress_matrix_is_left_out_by_default_and_sliced_without_gaps() -> None:
    default, stress = _collected(), _collected("-m", "stress")
    assert default and stress and not default & stress
    slices = [_collected("-m", "stress", "--stress-slice", f"{k}/3") for k in range(3)]
    assert set().union(*slices) == stress
    assert sum(len(part) for part in slices) == len(stress)
