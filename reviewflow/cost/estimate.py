"""What a review will cost before its first request: requests, prompt and completion tokens and
money, per file and per stage, from the chunking plan and the real rendered prompts.

Every prompt is measured with the chunker's token counter (`reviewflow.review.tokens`); what
only the model decides is an assumption, stated here and in the README:

- main stage, per chunk: the model makes `ceil(changed lines / LINES_PER_CONTEXT_CALL)` context
  calls (at least 1, at most the file's context budget), one per round, then one more round
  that comments and ends: calls + 1 requests. Each context call returns about one read of the
  reviewed file (its real size, cut as `file_read` cuts it; `DEFAULT_READ_TOKENS` when the
  size is unknown). Every round resends the conversation so far; compression and the token
  guard are applied as the loop applies them (at 60% and 80% of `review.max_chunk_tokens`).
- findings: a file is expected to get `FINDINGS_PER_CHANGED_LINE` findings per changed line (at
  most `MAX_FINDINGS_PER_FILE`); the range's high end expects `HIGH_FINDINGS_PER_CHANGED_LINE`,
  at least `HIGH_FINDINGS_PER_FILE` and at most `MAX_HIGH_FINDINGS_PER_FILE`, and its low end
  none. Calibrated on the Martian benchmark's offline results (`bench/findings_rate.py`: twelve
  review tools' comments on 50 real pull requests, 0.67–0.75 per touched file at the median,
  1.9–2.0 at the 90th percentile, 4.0–4.7 at the 99th), at 30 changed lines per touched file
  (the benchmark stores no diff sizes). A file with findings is filtered once (with probability
  `min(MAX_FINDING_SHARE, findings)`) and relocated with probability `RELOCATION_SHARE`.
- `--verify`: each finding gets `VERIFY_QUESTIONS` questions, each answered after one context
  call (while the verify budget lasts), then one score.
- localization (a non-English `output.language`): one request when findings are expected.
- the context pack (`review.context`): a file's pack is in every main request of each of its
  chunks, so it is counted in their prompt tokens (and shown per file as `context_tokens`).
- completions: the per-request sizes below (tool calls and short JSON answers).

Expected requests are fractional where a stage may or may not run; money is the price's input
rate on every prompt token (an upper bound when the provider caches prompt prefixes), each stage
at the price of the model it asks (`reviewflow.cost.charges`: a pass's model, the verify model).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ReviewSettings
from reviewflow.cost import prompts
from reviewflow.cost.charges import StagePrices
from reviewflow.cost.prices import PriceInfo
from reviewflow.findings.localize import is_english
from reviewflow.review.compress import TRIGGER_SHARE
from reviewflow.review.jobs import FileJob
from reviewflow.review.loop import GUARD_SHARE
from reviewflow.review.session import context_budget
from reviewflow.review.tools import MAX_OUTPUT_BYTES, MAX_READ_LINES

LINES_PER_CONTEXT_CALL = 15
DEFAULT_READ_TOKENS = 1000
BYTES_PER_LINE = 36  # an average source line, for the read's line numbers
FINDINGS_PER_CHANGED_LINE = 0.025  # 0.75 in a 30-line change: the benchmark's median
MAX_FINDINGS_PER_FILE = 4.0  # its 99th percentile per touched file
HIGH_FINDINGS_PER_CHANGED_LINE = 0.067  # 2.0 in a 30-line change: its 90th percentile
HIGH_FINDINGS_PER_FILE = 2.0  # even a one-line change can carry two
MAX_HIGH_FINDINGS_PER_FILE = 8.0
MAX_FINDING_SHARE = 0.8
CANDIDATE_TOKENS = 150  # one candidate (or finding) as a later stage lists it
RELOCATION_SHARE = 0.25
VERIFY_QUESTIONS = 3
COMPLETION = {  # tokens per answer
    "plan": 250,
    "main": 60,  # a context call
    "main_final": 300,  # comments and task_done
    "compress": 400,
    "relocate": 100,
    "filter": 20,
    "localize": 2 * CANDIDATE_TOKENS,
    "verify_questions": 100,
    "verify_answer": 120,
    "verify_score": 40,
}
STAGES = ("plan", "main", "compress", "relocate", "filter", "verify", "localize")


class Figures(BaseModel):
    """Expected requests, prompt and completion tokens (of a stage, a file or a review)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            requests=self.requests + other.requests,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )

    def scaled(self, share: float) -> Figures:
        """These figures times `share` (a stage that runs with that probability)."""
        return Figures(
            requests=self.requests * share,
            prompt_tokens=round(self.prompt_tokens * share),
            completion_tokens=round(self.completion_tokens * share),
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class FileEstimate(BaseModel):
    """One file's expected cost, by stage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    chunks: int
    stages: dict[str, Figures]
    context_tokens: int = 0
    """The file's context pack, in each of its main requests (counted in their prompts)."""

    @property
    def total(self) -> Figures:
        return sum(self.stages.values(), Figures())


BASE_STAGES = ("plan", "main", "compress")  # what the review sends whatever it finds


class Estimate(BaseModel):
    """A review's expected cost: per file, the review-wide stages, and the prices used (`price`:
    `model.*`'s; `prices`: each stage's model's); the findings it expects (`findings`,
    `findings_high`) and its figures by stage with none (`low`) and with the range's high end
    (`high`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: tuple[FileEstimate, ...] = ()
    review_stages: dict[str, Figures] = {}  # localization: once per review
    price: PriceInfo | None = None
    prices: StagePrices = StagePrices.one(None)
    findings: float = 0.0
    findings_high: float = 0.0
    low: dict[str, Figures] = {}
    high: dict[str, Figures] = {}

    @property
    def by_stage(self) -> dict[str, Figures]:
        totals: dict[str, Figures] = {}
        for part in [*(f.stages for f in self.files), self.review_stages]:
            for stage, figures in part.items():
                totals[stage] = totals.get(stage, Figures()) + figures
        return {stage: totals[stage] for stage in STAGES if stage in totals}

    @property
    def total(self) -> Figures:
        return sum(self.by_stage.values(), Figures())

    def cost_of(self, stages: Mapping[str, Figures]) -> float | None:
        """The money `stages` (figures by stage) cost, each stage at the price of the model it
        asks (None when one of them has no price, or their prices are in two currencies)."""
        total, currencies = 0.0, set()
        for stage, figures in stages.items():
            rates = self.prices.for_stage(stage)
            if rates is None:
                return None
            currencies.add(rates.currency)
            total += rates.cost(figures.prompt_tokens, figures.completion_tokens)
        return total if len(currencies) <= 1 else None

    def stage_cost(self, stage: str, figures: Figures) -> float | None:
        """The money one stage's `figures` cost."""
        return self.cost_of({stage: figures})

    @property
    def cost(self) -> float | None:
        return self.cost_of(self.by_stage)


def read_tokens(size: int | None) -> int:
    """What one `file_read` of a file of `size` bytes returns (cut as the tool cuts it)."""
    if size is None:
        return DEFAULT_READ_TOKENS
    lines = min(MAX_READ_LINES, max(1, size // BYTES_PER_LINE))
    shown = min(size, lines * BYTES_PER_LINE * 2, MAX_OUTPUT_BYTES)
    return math.ceil((shown + lines * 5 + 40) / 4)


def expected_findings(job: FileJob, high: bool = False) -> float:
    """The findings `job`'s file is expected to get (the range's high end with `high`)."""
    lines = job.changed_lines
    if lines <= 0:
        return 0.0
    if not high:
        return min(MAX_FINDINGS_PER_FILE, lines * FINDINGS_PER_CHANGED_LINE)
    grown = max(HIGH_FINDINGS_PER_FILE, lines * HIGH_FINDINGS_PER_CHANGED_LINE)
    return min(MAX_HIGH_FINDINGS_PER_FILE, grown)


def estimate_review(
    jobs: Sequence[FileJob],
    sizes: Mapping[str, int | None],
    settings: ReviewSettings,
    language: str,
    price: PriceInfo | None,
    prices: StagePrices | None = None,
) -> Estimate:
    """The expected cost of reviewing `jobs` (`sizes`: each file's bytes in the snapshot), and
    its range: no findings at the low end, the high rate's findings at the other. `price` is
    `model.*`'s; `prices`, the model each stage asks and its price (by default all `price`)."""
    files = tuple(estimate_file(job, sizes.get(job.path), settings) for job in jobs)
    low: dict[str, Figures] = {}
    for item in files:
        _add(low, {s: f for s, f in item.stages.items() if s in BASE_STAGES})
    expected = sum(expected_findings(job) for job in jobs)
    high_count = sum(expected_findings(job, high=True) for job in jobs)
    high = dict(low)
    localize_high = localization(language, high_count)
    if localize_high.requests:
        high["localize"] = localize_high
    for job in jobs:
        stages = findings_stages(job, sizes.get(job.path), settings, expected_findings(job, True))
        _add(high, per_pass(stages, settings.passes))
    review_stages: dict[str, Figures] = {}
    localize = localization(language, expected)
    if localize.requests:
        review_stages["localize"] = localize
    return Estimate(
        files=files,
        review_stages=review_stages,
        price=price,
        prices=prices or StagePrices.one(price, settings.passes),
        findings=expected,
        findings_high=high_count,
        low=low,
        high=high,
    )


def _add(totals: dict[str, Figures], stages: Mapping[str, Figures]) -> None:
    """Add `stages` to `totals`, stage by stage, in `STAGES` order."""
    for stage, figures in stages.items():
        totals[stage] = totals.get(stage, Figures()) + figures
    ordered = {stage: totals[stage] for stage in STAGES if stage in totals}
    totals.clear()
    totals.update(ordered)


def localization(language: str, findings: float) -> Figures:
    """The one localization request of a non-English review expecting `findings` (weighted by
    the chance that there are any; nothing in English or without findings)."""
    if is_english(language) or findings <= 0:
        return Figures()
    listing = max(1, round(findings)) * CANDIDATE_TOKENS
    localize = Figures(
        requests=1.0,
        prompt_tokens=prompts.localize_prompt(language, listing),
        completion_tokens=COMPLETION["localize"],
    )
    return localize.scaled(min(1.0, findings))


def estimate_file(job: FileJob, size: int | None, settings: ReviewSettings) -> FileEstimate:
    """One file's expected cost: plan, main (and compression) per chunk, relocation, filter
    and verification."""
    stages: dict[str, Figures] = {}
    if job.needs_plan:
        stages["plan"] = Figures(
            requests=1.0,
            prompt_tokens=prompts.plan_prompt(job),
            completion_tokens=COMPLETION["plan"],
        )
    main, compress = Figures(), Figures()
    for index in range(len(job.chunks)):
        chunk_main, chunk_compress = chunk_session(job, index, read_tokens(size), settings)
        main, compress = main + chunk_main, compress + chunk_compress
    stages["main"] = main
    if compress.requests:
        stages["compress"] = compress
    stages.update(findings_stages(job, size, settings, expected_findings(job)))
    context = job.context.tokens if job.context is not None else 0
    return FileEstimate(
        path=job.path,
        chunks=len(job.chunks),
        stages=per_pass(stages, settings.passes),
        context_tokens=context,
    )


def per_pass(stages: dict[str, Figures], passes: int) -> dict[str, Figures]:
    """A file's stages for `passes` independent passes (`review.passes`): every model stage of
    its chain once per pass; verification once, of the findings that stay."""
    if passes == 1:
        return stages
    return {name: f if name == "verify" else f.scaled(passes) for name, f in stages.items()}


def chunk_session(
    job: FileJob, index: int, result_tokens: int, settings: ReviewSettings
) -> tuple[Figures, Figures]:
    """The main requests of one chunk session, and its compression requests."""
    budget = context_budget(job.changed_lines, settings.max_context_tool_calls)
    changed = max(1, job.chunks[index].changed_lines)
    calls = min(budget, max(1, math.ceil(changed / LINES_PER_CONTEXT_CALL)))
    rounds = min(settings.max_tool_rounds, calls + 1)
    calls_cap = settings.max_context_tool_calls
    base = prompts.main_prompt(job, index, COMPLETION["plan"], calls_cap, settings.context)
    capacity = settings.max_chunk_tokens
    main, compress = Figures(), Figures()
    grown = 0  # what the rounds so far added to the conversation
    for number in range(rounds):
        if base + grown >= TRIGGER_SHARE * capacity and grown > COMPLETION["compress"]:
            compress += Figures(
                requests=1.0,
                prompt_tokens=prompts.compress_system() + grown,
                completion_tokens=COMPLETION["compress"],
            )
            grown = COMPLETION["compress"]
        if base + grown >= GUARD_SHARE * capacity:
            break  # the token guard ends the session
        final = number == rounds - 1
        answer = COMPLETION["main_final" if final else "main"]
        main += Figures(requests=1.0, prompt_tokens=base + grown, completion_tokens=answer)
        grown += answer + (0 if final else result_tokens)
    return main, compress


def findings_stages(
    job: FileJob, size: int | None, settings: ReviewSettings, findings: float
) -> dict[str, Figures]:
    """Relocation, the review filter and verification of `job`'s file when it is expected to
    get `findings` findings (the first two weighted by the chance that there are any)."""
    if findings <= 0:
        return {}
    share = min(MAX_FINDING_SHARE, findings)
    listing = max(1, round(findings)) * CANDIDATE_TOKENS
    stages = {
        "relocate": Figures(
            requests=1.0,
            prompt_tokens=prompts.listing_prompt("relocate", job, listing),
            completion_tokens=COMPLETION["relocate"],
        ).scaled(share * RELOCATION_SHARE),
        "filter": Figures(
            requests=1.0,
            prompt_tokens=prompts.listing_prompt("filter", job, listing),
            completion_tokens=COMPLETION["filter"],
        ).scaled(share),
    }
    if settings.verify:
        one = verification(
            job.path, read_tokens(size), settings.verify_budget, symbols=settings.context
        )
        stages["verify"] = one.scaled(findings)
    return stages


def verification(path: str, result_tokens: int, budget: int, symbols: bool = False) -> Figures:
    """One finding's verification: questions, answers (a context call each while the budget
    lasts, then the answer; with `symbols`, the symbol tools offered too), score."""
    answers = VERIFY_QUESTIONS * COMPLETION["verify_answer"]
    questions, answer, score = prompts.verify_prompts(path, CANDIDATE_TOKENS, answers, symbols)
    total = Figures(
        requests=2.0,
        prompt_tokens=questions + score,
        completion_tokens=COMPLETION["verify_questions"] + COMPLETION["verify_score"],
    )
    calls = min(budget, VERIFY_QUESTIONS)
    for number in range(VERIFY_QUESTIONS):
        if number < calls:  # a context call, then the answer with its result
            total += Figures(
                requests=1.0, prompt_tokens=answer, completion_tokens=COMPLETION["main"]
            )
            answer_prompt = answer + COMPLETION["main"] + result_tokens
        else:
            answer_prompt = answer
        total += Figures(
            requests=1.0,
            prompt_tokens=answer_prompt,
            completion_tokens=COMPLETION["verify_answer"],
        )
    return total
