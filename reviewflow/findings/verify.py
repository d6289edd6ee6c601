"""Chain-of-Verification of one finding (`--verify`), after finalize and before localization.

1. a tool-free request writes 2-4 falsification questions about the finding;
2. each is answered from the code with the read-only tools (`verify_answer`: the context
   tools, and with `review.context` on the symbol tools), never seeing the finding's reasoning;
3. a tool-free request scores the finding 1-10 from the questions and answers alone.

`apply_verifications` then puts the score (scaled to 0-1) in place of the confidence, keeping
the model's own as `model_confidence`, and drops the findings below
`review.confidence_threshold` as `not_verified`. A verification that fails (a request error, an
unusable answer twice) keeps its finding as it was, unverified, and makes the review incomplete.
A verifier that answers the questions request with no question at all (`[]`) has not failed:
the finding stays as it was, unverified (its own confidence already met the threshold), with a
`verification_no_questions` warning, and the review stays complete.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from reviewflow.context.query import CodeIndex
from reviewflow.findings.answers import (
    PROMPTS,
    AnswerError,
    Question,
    ask,
    parse_array,
    parse_json,
)
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import Dropped, DropReason, Finding, VerificationScore
from reviewflow.findings.verify_answer import answer_questions
from reviewflow.models import ReviewWarning, cut_text
from reviewflow.prompts import render
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import RequestRecord, Send, Stage, StageResult

MIN_QUESTIONS, MAX_QUESTIONS = 2, 4
MAX_QUESTION_CHARS = 500
MAX_REASON_CHARS = 300
QUESTIONS_FORMAT = '["Is `items` checked for emptiness before line 16 of app/billing.py?", "..."]'
QUESTIONS_WRAPPERS = ("questions",)
SCORE_FORMAT = '{"score": 7, "reason": "one sentence"}'
SCORE_MAX = 10
WARNING_CODE = "verification_failed"
NO_QUESTIONS_CODE = "verification_no_questions"
DETAIL_QUESTION_CHARS, DETAIL_ANSWER_CHARS = 160, 240


class Verification(StageResult):
    """One finding's verification: questions, answers, score (None: it failed or never ran)."""

    fingerprint: str
    questions: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    score: int | None = None
    reason: str = ""
    tool_calls: int = 0

    @property
    def confidence(self) -> float | None:
        """The score scaled to 0-1 (8/10 -> 0.8)."""
        return None if self.score is None else self.score / SCORE_MAX


def verify(
    finding: Finding,
    snapshot: Snapshot,
    budget: int,
    send: Send,
    symbols: Callable[[], CodeIndex] | None = None,
) -> Verification:
    """Verify `finding`: questions, answers from the code (`budget` context calls), score.
    `symbols` loads the code index the symbol tools read (None: they are not offered)."""
    result = Verification(path=finding.path, fingerprint=finding.fingerprint)
    asked = ask(_questions(finding), _parse_questions, send)
    records: tuple[RequestRecord, ...] = asked.records
    if asked.value is None:
        return _failed(result, records, asked.warnings)
    questions = asked.value
    if not questions:
        return _unasked(finding, result, records)
    answered = answer_questions(questions, finding, snapshot, budget, send, symbols)
    records += answered.records
    result = result.model_copy(update={"questions": questions, "tool_calls": answered.tool_calls})
    if answered.failure is not None:
        why = f"{_what(finding)} failed: {answered.failure}; review incomplete"
        return _failed(result, records, (ReviewWarning(WARNING_CODE, why, finding.path),))
    scored = ask(_scoring(finding, questions, answered.answers), _parse_score, send)
    records += scored.records
    result = result.model_copy(update={"answers": answered.answers})
    if scored.value is None:
        return _failed(result, records, scored.warnings)
    score, reason = scored.value
    return result.model_copy(update={"score": score, "reason": reason, "records": records})


def _failed(
    result: Verification, records: tuple[RequestRecord, ...], warnings: Sequence[ReviewWarning]
) -> Verification:
    update = {"complete": False, "warnings": tuple(warnings), "records": records}
    return result.model_copy(update=update)


def _unasked(
    finding: Finding, result: Verification, records: tuple[RequestRecord, ...]
) -> Verification:
    """The verifier asked nothing: the finding is kept unverified, the review stays complete."""
    why = (
        f"the verifier asked no question about {finding.id} ({finding.path}:"
        f"{finding.start_line}): kept unverified with its own confidence "
        f"{finding.confidence:g} (a verifier must answer with {MIN_QUESTIONS} to "
        f"{MAX_QUESTIONS} falsification questions, a JSON array of strings)"
    )
    warning = ReviewWarning(NO_QUESTIONS_CODE, why, finding.path)
    return result.model_copy(update={"warnings": (warning,), "records": records})


def _what(finding: Finding) -> str:
    return f"verification of {finding.id} ({finding.path}:{finding.start_line})"


def _question(stage: Stage, finding: Finding, system: str, user: str, form: str) -> Question:
    return Question(
        stage=stage,
        path=finding.path,
        system=system,
        user=user,
        answer_format=form,
        warning_code=WARNING_CODE,
        what=_what(finding),
    )


def _questions(finding: Finding) -> Question:
    """Step 1: the finding in full (it is what the questions are about)."""
    shown = finding.model_dump(
        mode="json",
        include={"path", "start_line", "end_line", "severity", "category", "title", "problem"}
        | {"evidence", "suggestion", "existing_code"},
    )
    return _question(
        "verify_questions",
        finding,
        render(PROMPTS, "verify_questions_system.j2", form=QUESTIONS_FORMAT),
        render(PROMPTS, "verify_questions_user.j2", finding=json.dumps(shown, indent=1)),
        QUESTIONS_FORMAT,
    )


def _scoring(finding: Finding, questions: Sequence[str], answers: Sequence[str]) -> Question:
    """Step 3: the questions and answers alone (neither the finding nor its reasoning)."""
    pairs = [{"question": q, "answer": a} for q, a in zip(questions, answers, strict=True)]
    return _question(
        "verify_score",
        finding,
        render(PROMPTS, "verify_score_system.j2", form=SCORE_FORMAT),
        render(PROMPTS, "verify_score_user.j2", answers=json.dumps(pairs, indent=1)),
        SCORE_FORMAT,
    )


def _parse_questions(text: str) -> tuple[str, ...]:
    """2-4 distinct questions (strings, or objects with a string "question"); more than four:
    the first four; none at all (`[]`): the verifier's answer that it has nothing to ask."""
    questions: list[str] = []
    for item in parse_array(text, QUESTIONS_WRAPPERS):
        value = item.get("question") if isinstance(item, dict) else item
        if not isinstance(value, str):
            raise AnswerError('every question must be a string (or {"question": "..."})')
        question = cut_text(" ".join(value.split()), MAX_QUESTION_CHARS)
        if question and question not in questions:
            questions.append(question)
    if questions and len(questions) < MIN_QUESTIONS:
        raise AnswerError(f"{MIN_QUESTIONS} to {MAX_QUESTIONS} questions are needed")
    return tuple(questions[:MAX_QUESTIONS])


def _parse_score(text: str) -> tuple[int, str]:
    """The score, a whole number from 1 to 10 (`{"score": 7}` or a bare 7), and any reason."""
    data: Any = parse_json(text)
    reason: Any = ""
    if isinstance(data, dict):
        data, reason = data.get("score"), data.get("reason", "")
    if isinstance(data, float) and data.is_integer():
        data = int(data)
    if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= SCORE_MAX:
        raise AnswerError(f'"score" must be a whole number from 1 to {SCORE_MAX}')
    if not isinstance(reason, str):
        raise AnswerError('"reason" must be a string')
    return data, cut_text(" ".join(reason.split()), MAX_REASON_CHARS)


def apply_verifications(
    finalized: Finalized, results: Sequence[Verification], threshold: float
) -> Finalized:
    """The findings with their verification scores as confidence; those below `threshold`
    dropped as `not_verified`. A finding without a score (failed, or cancelled before it
    ran) stays as it was; a failed verification makes the review incomplete."""
    by_print = {result.fingerprint: result for result in results}
    kept: list[Finding] = []
    drops: list[Dropped] = []
    for finding in finalized.findings:
        result = by_print.get(finding.fingerprint)
        confidence = None if result is None else result.confidence
        if result is None or confidence is None:
            kept.append(finding)
        elif confidence < threshold:
            drops.append(_not_verified(finding, result, threshold))
        else:
            kept.append(_verified(finding, result, confidence))
    return finalized.model_copy(
        update={
            "findings": tuple(kept),
            "dropped": (*finalized.dropped, *drops),
            "warnings": (*finalized.warnings, *(w for r in results for w in r.warnings)),
            "complete": finalized.complete and all(r.complete for r in results),
            "records": (*finalized.records, *(rec for r in results for rec in r.records)),
        }
    )


def _verified(finding: Finding, result: Verification, confidence: float) -> Finding:
    assert result.score is not None
    score = VerificationScore(score=result.score, questions=len(result.questions))
    update = {"confidence": confidence, "model_confidence": finding.confidence}
    return finding.model_copy(update={**update, "verification": score})


def _not_verified(finding: Finding, result: Verification, threshold: float) -> Dropped:
    return Dropped(
        path=finding.path,
        title=finding.title,
        reason=DropReason.NOT_VERIFIED,
        detail=verification_detail(result, threshold),
    )


def verification_detail(result: Verification, threshold: float) -> str:
    """One line: the score against the threshold, the scorer's reason, each question and its
    answer (cut)."""
    parts = [
        f"verification score {result.score}/{SCORE_MAX} = {result.confidence:g} "
        f"< review.confidence_threshold {threshold:g}"
    ]
    if result.reason:
        parts.append(f"reason: {result.reason}")
    for number, (question, answer) in enumerate(
        zip(result.questions, result.answers, strict=True), 1
    ):
        asked = cut_text(question, DETAIL_QUESTION_CHARS)
        found = cut_text(answer, DETAIL_ANSWER_CHARS)
        parts.append(f"Q{number}: {asked} A{number}: {found}")
    return "; ".join(parts)
