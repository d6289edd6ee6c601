"""The prompts a review will send, rendered from the real templates and measured with the
chunker's token counter (`reviewflow.review.tokens`): what the estimate is built on.

Where a prompt holds what only the model can write (the plan's guidance, the candidates the
filter lists, a finding being verified), a stand-in of the expected size takes its place.
"""

from __future__ import annotations

from reviewflow.findings.answers import PROMPTS as FINDINGS_PROMPTS
from reviewflow.findings.answers import listing_prompts
from reviewflow.findings.filter import FILTER_FORMAT
from reviewflow.findings.localize import LOCALIZE_FORMAT
from reviewflow.findings.relocate import RELOCATION_FORMAT
from reviewflow.findings.verify import QUESTIONS_FORMAT, SCORE_FORMAT
from reviewflow.prompts import render
from reviewflow.providers.messages import ModelRequest, UserMessage
from reviewflow.review import templates, tools
from reviewflow.review.jobs import FileJob
from reviewflow.review.plan import plan_request
from reviewflow.review.session import context_budget
from reviewflow.review.tokens import CHARS_PER_TOKEN, estimate_request, estimate_tokens


def stand_in(tokens: int) -> str:
    """Text of about `tokens` tokens, for what the model will write."""
    return "x" * (tokens * CHARS_PER_TOKEN)


def plan_prompt(job: FileJob) -> int:
    """The plan request of `job`, exactly as it will be sent."""
    return estimate_request(plan_request(job))


def main_prompt(
    job: FileJob, chunk: int, guidance_tokens: int, max_context_calls: int, symbols: bool = False
) -> int:
    """The first main request of chunk `chunk` (system, tools and the chunk's message), with
    a plan's guidance of `guidance_tokens` when the file is planned (and with `symbols`, the
    symbol tools in its tool block, as `review.context` on offers them)."""
    budget = context_budget(job.changed_lines, max_context_calls)
    guidance = stand_in(guidance_tokens) if job.needs_plan else None
    request = ModelRequest(
        system=templates.main_system(job),
        messages=(UserMessage(content=templates.main_user(job, chunk, guidance, budget)),),
        tools=tools.offered(True, symbols),
    )
    return estimate_request(request)


def compress_system() -> int:
    """The compression request's system prompt (its rounds are what the loop accumulated)."""
    return estimate_tokens(templates.system("compress"))


LISTING_FORMATS = {"relocate": RELOCATION_FORMAT, "filter": FILTER_FORMAT}


def listing_prompt(stage: str, job: FileJob, listing_tokens: int) -> int:
    """A relocation or review-filter request (`stage`) for `job`, with candidates listed in
    `listing_tokens`."""
    diff = "\n".join(chunk.text for chunk in job.chunks)
    system, user = listing_prompts(
        stage, LISTING_FORMATS[stage], job.path, diff, stand_in(listing_tokens)
    )
    return estimate_tokens(system) + estimate_tokens(user)


def localize_prompt(language: str, listing_tokens: int) -> int:
    """The localization request with findings listed in `listing_tokens`."""
    system = render(FINDINGS_PROMPTS, "localize_system.j2", language=language, form=LOCALIZE_FORMAT)
    user = render(FINDINGS_PROMPTS, "localize_user.j2", findings=stand_in(listing_tokens))
    return estimate_tokens(system) + estimate_tokens(user)


def verify_prompts(
    path: str, finding_tokens: int, answers_tokens: int, symbols: bool = False
) -> tuple[int, int, int]:
    """The three verification requests of one finding, before any tool result: questions,
    one answer's first round (tools included: with `symbols`, the symbol tools and their
    line of the system prompt, as `review.context` on offers them), and the score."""
    questions = estimate_tokens(
        render(FINDINGS_PROMPTS, "verify_questions_system.j2", form=QUESTIONS_FORMAT)
    ) + estimate_tokens(
        render(FINDINGS_PROMPTS, "verify_questions_user.j2", finding=stand_in(finding_tokens))
    )
    answer = ModelRequest(
        system=render(FINDINGS_PROMPTS, "verify_answer_system.j2", symbols=symbols),
        messages=(
            UserMessage(
                content=render(
                    FINDINGS_PROMPTS,
                    "verify_answer_user.j2",
                    question=stand_in(40),
                    path=path,
                    start_line=1,
                    end_line=1,
                    code=stand_in(finding_tokens // 4),
                )
            ),
        ),
        tools=tools.answering(symbols),
    )
    score = estimate_tokens(
        render(FINDINGS_PROMPTS, "verify_score_system.j2", form=SCORE_FORMAT)
    ) + estimate_tokens(
        render(FINDINGS_PROMPTS, "verify_score_user.j2", answers=stand_in(answers_tokens))
    )
    return questions, estimate_request(answer), score
