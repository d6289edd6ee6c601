"""The engine's prompts (plan, main, compression), rendered from `prompts/*.j2`.

System prompts take no variables, so they are byte-identical across files and reviews.
"""

from __future__ import annotations

from pathlib import Path

from reviewflow.prompts import render
from reviewflow.review.jobs import FileJob
from reviewflow.review.recording import bounded

PROMPTS = Path(__file__).parent / "prompts"
PLAN_MAX_DIFF_CHARS = 48_000


def system(stage: str) -> str:
    """The fixed system prompt of `stage` ("main", "plan" or "compress")."""
    return render(PROMPTS, f"{stage}_system.j2")


def main_user(job: FileJob, chunk: int, guidance: str | None, budget: int) -> str:
    """The first user message of a chunk session."""
    return render(
        PROMPTS,
        "main_user.j2",
        path=job.path,
        old_path=job.old_path if job.old_path != job.path else None,
        status=job.status,
        chunk_index=chunk,
        chunk_count=len(job.chunks),
        rule=job.rule,
        rule_label=job.rule_label,
        guidance=guidance,
        diff=job.chunks[chunk].text,
        language=job.language,
        budget=budget,
    )


def plan_user(job: FileJob) -> str:
    """The plan request's user message: the whole file change and its rule."""
    return render(
        PROMPTS,
        "plan_user.j2",
        path=job.path,
        changed_lines=job.changed_lines,
        rule=job.rule,
        rule_label=job.rule_label,
        diff=bounded("\n".join(chunk.text for chunk in job.chunks), PLAN_MAX_DIFF_CHARS),
    )


def reminder() -> str:
    return render(PROMPTS, "reminder.j2")


def compress_user(rounds_json: str) -> str:
    return render(PROMPTS, "compress_user.j2", rounds=rounds_json)


def summary(text: str) -> str:
    return render(PROMPTS, "summary.j2", summary=text)
