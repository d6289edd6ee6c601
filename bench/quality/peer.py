"""The same case through pr-agent (`--peer pr-agent`), scored the same way, side by side.

pr-agent needs Python 3.12 or later while reviewflow runs on 3.11, so it is not imported: its
own `pr-agent` command (installed separately, e.g. `pipx install pr-agent`) is run on PATH,
with its local git provider (documented in pr-agent: `config.git_provider = local`, the review
written to `local.review_path`), in a temporary worktree of the cached repository: HEAD on a
branch at the case's head, the target branch at its base. Its settings go in its environment
(`CONFIG.GIT_PROVIDER`, `CONFIG.MODEL`, `OPENAI.API_BASE`, `OPENAI.KEY`, its documented
dotted names), never in a file or a command line. Only the openai protocol is wired: the
review's requests then go through the recording proxy like reviewflow's.

Its review is free text: the judge model splits it into issues (the Martian benchmark's step 2
does the same for general comments), and those are judged against the golden comments.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.quality.cases import QualityError

COMMAND = "pr-agent"


@dataclass
class PeerRun:
    exit_code: int
    seconds: float
    review: str
    stderr_tail: str = ""
    candidates: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "review": self.review,
            "stderr_tail": self.stderr_tail,
            "candidates": self.candidates,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PeerRun:
        return cls(
            data["exit_code"],
            data["seconds"],
            data["review"],
            data.get("stderr_tail", ""),
            list(data.get("candidates", [])),
        )


def peer_missing(protocol: str) -> str | None:
    """Why pr-agent cannot run here (one line), or None."""
    if shutil.which(COMMAND) is None:
        return f"peer pr-agent is not installed (no `{COMMAND}` command on PATH)"
    if protocol != "openai":
        return f"peer pr-agent is wired for the openai protocol only (not {protocol})"
    return None


def run_peer(
    repo: Path, base: str, head: str, model: str, proxy_url: str, key: str | None
) -> PeerRun:
    """pr-agent's review of base..head (merge-base, as its local provider diffs)."""
    with tempfile.TemporaryDirectory(prefix="quality-peer-") as folder:
        tree, out = Path(folder) / "tree", Path(folder) / "review.md"
        tag = f"quality-peer-{os.getpid()}"
        _git(repo, "branch", "-f", f"{tag}-base", base)
        _git(repo, "worktree", "add", "-q", "-B", f"{tag}-head", str(tree), head)
        env = dict(os.environ)
        env |= {
            "CONFIG.GIT_PROVIDER": "local",
            "CONFIG.MODEL": model,
            "LOCAL.REVIEW_PATH": str(out),
            "OPENAI.API_BASE": proxy_url,
        }
        if key:
            env["OPENAI.KEY"] = key
        started = time.monotonic()
        try:
            done = subprocess.run(
                [COMMAND, "--pr_url", f"{tag}-base", "review"],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
        except subprocess.TimeoutExpired:
            raise QualityError("pr-agent ran over 30 minutes") from None
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))
            _git(repo, "branch", "-D", f"{tag}-base", f"{tag}-head")
        review = out.read_text(encoding="utf-8") if out.exists() else ""
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        return PeerRun(done.returncode, time.monotonic() - started, review, tail)


def _git(repo: Path, *args: str) -> None:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise QualityError(f"git {args[0]} for pr-agent: {last}")
