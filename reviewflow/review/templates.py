"""The engine's prompts (plan, main, compression), rendered from `prompts/*.j2`.

System prompts take no variables, so they are byte-identical across files and reviews; the
team's instructions (`--instructions`), when given, follow the main and plan system prompts,
the same for every file of a review.
"""

from __future__ import annotations

from pathlib import Path

from reviewflow.prompts import render
from reviewflow.review.jobs import FileJob
from reviewflow.review.recording import bounded

PROMPTS = Path(__file__).parent / "prompts"
PLAN_MAX_DIFF_CHARS = 48_000


def system(stage: str, instructions: str | None = None) -> str:
    """The system prompt of `stage` ("main", "plan" or "compress"), then the team's
    `instructions` (trusted guidance) when there are any."""
    text = render(PROMPTS, f"{stage}_system.j2")
    if not instructions:
        return text
    return text + "\n" + render(PROMPTS, "instructions.j2", instructions=instructions)


def main_system(job: FileJob) -> str:
    """The main stage's system prompt: the team's instructions, then the SAST guidance when
    the file has pre-scan results, then the context pack's when it has one (the text is fixed
    either way)."""
    text = system("main", job.instructions)
    if job.sast:
        text += "\n" + render(PROMPTS, "main_sast_system.j2")
    if job.context is not None:
        text += "\n" + render(PROMPTS, "main_context_system.j2")
    return text


def main_user(job: FileJob, chunk: int, guidance: str | None, budget: int) -> str:
    """The first user message of a chunk session."""
    return render(
        PROMPTS,
        "main_user.j2",
        chunk_index=chunk,
        chunk_count=len(job.chunks),
        rule=_rule(job),
        guidance=guidance,
        change=_change(job, job.chunks[chunk].text),
        language=job.language,
        budget=budget,
        sast=sast_text(job),
        context=job.context.text if job.context is not None else None,
    )


def plan_user(job: FileJob) -> str:
    """The plan request's user message: the whole file change and its rule."""
    diff = bounded("\n".join(chunk.text for chunk in job.chunks), PLAN_MAX_DIFF_CHARS)
    return render(
        PROMPTS,
        "plan_user.j2",
        changed_lines=job.changed_lines,
        rule=_rule(job),
        change=_change(job, diff),
    )


def sast_text(job: FileJob) -> str | None:
    """The file's SAST results as the user message lists them, or None without any."""
    if not job.sast:
        return None
    return "\n".join(
        f"- {item.rule_id} [{item.severity}] {item.path}:{_lines(item.start_line, item.end_line)}"
        f": {item.message}"
        for item in job.sast
    )


def _lines(start: int, end: int) -> str:
    return str(start) if start == end else f"{start}-{end}"


def _rule(job: FileJob) -> str:
    return f"({job.rule_label})\n{job.rule}"


def _change(job: FileJob, diff: str) -> str:
    renamed = f" from {job.old_path}" if job.old_path and job.old_path != job.path else ""
    return f"{job.path}\n{job.status}{renamed}\n{diff}"


def reminder() -> str:
    return render(PROMPTS, "reminder.j2")


def compress_user(rounds_json: str) -> str:
    return render(PROMPTS, "compress_user.j2", rounds=rounds_json)


def summary(text: str) -> str:
    return render(PROMPTS, "summary.j2", summary=text)
