"""Running reviewflow on one case the way a user does: the CLI in its own process.

`python -m flows.review --repo CACHE --from BASE --to HEAD --json OUT` (merge-base(BASE, HEAD)..
HEAD, the pull request's own diff), with the model's endpoint replaced by the recording proxy's
and the review cache off, so every answer the review uses is one the cassette holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality.cases import QualityError

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class ModelChoice:
    protocol: str
    name: str
    endpoint: str  # the real endpoint (the proxy forwards to it)


@dataclass(frozen=True, slots=True)
class ReviewRun:
    exit_code: int
    seconds: float
    report: dict[str, Any] | None
    stderr_tail: str

    def as_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "report": self.report,
            "stderr_tail": self.stderr_tail,
        }


def review_command(
    repo: Path,
    base: str,
    head: str,
    model: ModelChoice,
    proxy_url: str,
    out: Path,
    extra: list[str],
) -> list[str]:
    command = [sys.executable, "-m", "flows.review", "--repo", str(repo)]
    command += ["--from", base, "--to", head, "--json", str(out), "--console", "off"]
    command += ["--no-progress", "--no-cache", "--report-dir", str(out.parent / "reports")]
    command += ["--protocol", model.protocol, "--model", model.name, "--endpoint", proxy_url]
    return command + extra


def run_review(
    repo: Path, base: str, head: str, model: ModelChoice, proxy_url: str, extra: list[str]
) -> ReviewRun:
    """One review of base..head; exit code 2 (an incomplete review) is kept, not raised."""
    with tempfile.TemporaryDirectory(prefix="quality-review-") as folder:
        out = Path(folder) / "report.json"
        command = review_command(repo, base, head, model, proxy_url, out, extra)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        started = time.monotonic()
        try:
            done = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600
            )
        except subprocess.TimeoutExpired:
            raise QualityError(f"review of {base[:12]}..{head[:12]} ran over an hour") from None
        seconds = time.monotonic() - started
        report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        return ReviewRun(done.returncode, seconds, report, tail)
