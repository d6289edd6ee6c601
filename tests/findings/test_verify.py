"""Chain-of-Verification (`--verify`): questions, answers from the code under a budget, the
score, and what it does to the findings (plain functions; the model is a scripted `Send`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from reviewflow.errors import PermanentProviderError
from reviewflow.findings.answers import AnswerError
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import DropReason, Finding
from reviewflow.findings.verify import (
    Verification,
    _parse_questions,
    _parse_score,
    apply_verifications,
    verification_detail,
    verify,
)
from reviewflow.git.models import FileDiff
from reviewflow.models import Category, Severity
from reviewflow.providers.messages import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import RequestRecord
from tests.findings.conftest import LINES, SendTo
from tests.gitutil import GitRepo
from tests.wire_server import Call, Text, ToolCalls, WireServer

PROBLEM = "PROBLEM-average_price divides by len(items), zero for an empty list"
EVIDENCE = "EVIDENCE-no emptiness check precedes the division"
SUGGESTION = "SUGGESTION-return 0 for an empty list"
QUESTIONS = [
    "Is `items` checked for emptiness before line 16 of app/billing.py?",
    "Do callers of average_price guard against an empty list?",
]


def _finding(**extra: object) -> Finding:
    fields: dict[str, object] = {
        "id": "Fa1",
        "fingerprint": "a1" * 32,
        "severity": Severity.HIGH,
        "category": Category.CORRECTNESS,
        "path": "app/billing.py",
        "start_line": LINES["divide"],
        "end_line": LINES["divide"],
        "title": "TITLE-Division by zero",
        "problem": PROBLEM,
        "evidence": EVIDENCE,
        "suggestion": SUGGESTION,
        "confidence": 0.9,
        "existing_code": "    return total_price / len(items)",
        "placed_by": "exact",
    }
    fields.update(extra)
    return Finding.model_validate(fields)


def _response(text: str = "", *calls: ToolCall) -> ModelResponse:
    return ModelResponse(text=text, tool_calls=calls)


def _read(call_id: str, start: int = 13, end: int = 16) -> ToolCall:
    args = {"file_path": "app/billing.py", "start_line": start, "end_line": end}
    return ToolCall(id=call_id, name="file_read", arguments=args)


@dataclass
class Verifier:
    """A scripted model telling the three steps apart by their system prompts: questions as
    given, answers by `answer(request)`, the score as given."""

    questions: str = json.dumps(QUESTIONS)
    score: str = '{"score": 9, "reason": "nothing guards the division"}'
    answer: Callable[[ModelRequest], ModelResponse] = lambda request: _response(
        "No: line 16 divides by len(items) with no check before it."
    )
    requests: list[tuple[str, ModelRequest]] = field(default_factory=list)

    def __call__(self, request: ModelRequest) -> ModelResponse:
        step = _step(request)
        self.requests.append((step, request))
        if step == "questions":
            return _response(self.questions)
        if step == "score":
            return _response(self.score)
        return self.answer(request)

    def of(self, step: str) -> list[ModelRequest]:
        return [request for name, request in self.requests if name == step]


def _step(request: ModelRequest) -> str:
    if "falsification questions instead" in request.system:
        return "questions"
    if "You score a reported code defect" in request.system:
        return "score"
    assert "You answer one question about a repository" in request.system
    return "answer"


def _text(request: ModelRequest) -> str:
    """Everything a request shows the model: system, messages, tools."""
    return request.model_dump_json()


@pytest.fixture
def snapshot(repo: GitRepo, change: dict[str, FileDiff]) -> Snapshot:
    return Snapshot(repo_root=str(repo.root), ref=repo.git("rev-parse", "HEAD").strip())


def _read_then_answer(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        return _response("", _read("r1"))
    return _response("No: lines 13-16 read `total_price = sum(...)` and divide with no check.")


def test_three_steps_score_the_finding_from_the_code(snapshot: Snapshot) -> None:
    model = Verifier(answer=_read_then_answer)
    result = verify(_finding(), snapshot, 4, model)
    assert (result.score, result.confidence, result.complete) == (9, 0.9, True)
    assert result.questions == tuple(QUESTIONS)
    assert [a[:3] for a in result.answers] == ["No:", "No:"]
    assert result.reason == "nothing guards the division"
    # the second question's read is the same lines: answered from the cache, no budget
    assert result.tool_calls == 2
    stages = [record.stage for record in result.records]
    assert stages == ["verify_questions", *["verify_answer"] * 4, "verify_score"]
    first_read = result.records[1].tool_calls[0]
    assert first_read.status == "ok" and "return total_price / len(items)" in first_read.output
    assert result.records[3].tool_calls[0].status == "cached"


def test_only_the_questions_request_sees_the_finding_reasoning(snapshot: Snapshot) -> None:
    model = Verifier(answer=_read_then_answer)
    verify(_finding(), snapshot, 4, model)
    [questions] = model.of("questions")
    assert PROBLEM in _text(questions) and EVIDENCE in _text(questions)
    answering, [scoring] = model.of("answer"), model.of("score")
    assert len(answering) == 4
    for request in (*answering, scoring):
        for reasoning in (PROBLEM, EVIDENCE, SUGGESTION, "TITLE-"):
            assert reasoning not in _text(request)
    # the answering request holds the question, where the code is, and the code itself
    first = answering[0].messages[0]
    assert isinstance(first, UserMessage)
    assert QUESTIONS[0] in first.content and "app/billing.py, lines 16-16" in first.content
    assert "return total_price / len(items)" in first.content and "untrusted" in first.content
    assert {tool.name for tool in answering[0].tools} == {"file_read", "code_search", "file_find"}
    assert QUESTIONS[1] in _text(scoring) and "No: lines 13-16" in _text(scoring)


def test_the_budget_is_shared_by_the_questions_and_then_no_tools_are_offered(
    snapshot: Snapshot,
) -> None:
    def greedy(request: ModelRequest) -> ModelResponse:
        if not request.tools:
            return _response("Unknown: the budget ran out.")
        calls = [_read(f"r{i}", i, i + 1) for i in range(1, 4)]
        comment = ToolCall(id="c", name="code_comment", arguments={"finding": {}})
        return _response("", *calls, comment)

    model = Verifier(answer=greedy)
    result = verify(_finding(), snapshot, 2, model)
    assert result.score == 9 and result.tool_calls == 4
    first_round = result.records[1].tool_calls
    assert [call.status for call in first_round] == ["ok", "ok", "error", "error"]
    assert "budget of 2 context calls is spent" in first_round[2].output
    assert "unknown tool 'code_comment'" in first_round[3].output
    answering = model.of("answer")
    assert [len(request.tools) for request in answering] == [3, 0, 0]  # second question: none
    assert result.answers[1] == "Unknown: the budget ran out."


def test_a_model_that_keeps_calling_tools_must_answer_in_the_last_round(
    snapshot: Snapshot,
) -> None:
    def reader(request: ModelRequest) -> ModelResponse:
        count = sum(isinstance(m, ToolResultMessage) for m in request.messages)
        return _response("", _read(f"r{count}", 1, 1))  # the same cached line, for free

    model = Verifier(answer=reader)
    result = verify(_finding(), snapshot, 4, model)
    assert result.complete and result.answers == ("unknown: no answer was given",) * 2
    assert [len(r.tools) for r in model.of("answer")] == [3, 3, 3, 0] * 2


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('["a?", "b?"]', ("a?", "b?")),
        ('{"questions": [{"question": "a?"}, " b\\n  again? "]}', ("a?", "b again?")),
        ('```json\n["a?", "b?", "c?", "d?", "e?"]\n```', ("a?", "b?", "c?", "d?")),
        ('["a?", "a?", "b?"]', ("a?", "b?")),
    ],
)
def test_questions_are_two_to_four_strings(answer: str, expected: tuple[str, ...]) -> None:
    assert _parse_questions(answer) == expected


@pytest.mark.parametrize("answer", ['["only one?"]', '["a?", 3]', "a? b?", '{"q": ["a", "b"]}'])
def test_unusable_questions(answer: str) -> None:
    with pytest.raises(AnswerError):
        _parse_questions(answer)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"score": 7, "reason": "mixed"}', (7, "mixed")),
        ("3", (3, "")),
        ('```\n{"score": 10.0}\n```', (10, "")),
    ],
)
def test_score_is_a_whole_number_from_1_to_10(answer: str, expected: tuple[int, str]) -> None:
    assert _parse_score(answer) == expected


@pytest.mark.parametrize(
    "answer", ['{"score": 0}', '{"score": 11}', '{"score": 7.5}', '{"score": "7"}', "true", "[7]"]
)
def test_unusable_scores(answer: str) -> None:
    with pytest.raises(AnswerError):
        _parse_score(answer)


def test_an_unusable_score_is_asked_again_then_gives_up(snapshot: Snapshot) -> None:
    model = Verifier(score="seven")
    result = verify(_finding(), snapshot, 0, model)
    assert result.score is None and not result.complete
    [warning] = result.warnings
    assert warning.code == "verification_failed" and "Fa1 (app/billing.py:16)" in warning.message
    assert [r.status for r in result.records if r.stage == "verify_score"] == ["error", "error"]
    assert result.answers and result.questions  # kept for the record


def test_a_failed_request_fails_the_verification_at_once(snapshot: Snapshot) -> None:
    def broken(request: ModelRequest) -> ModelResponse:
        raise PermanentProviderError("HTTP 401: bad key")

    model = Verifier(answer=broken)
    result = verify(_finding(), snapshot, 4, model)
    assert not result.complete and result.score is None
    assert [r.stage for r in result.records] == ["verify_questions", "verify_answer"]
    assert result.records[-1].status == "error" and "401" in (result.records[-1].error or "")
    assert len(model.of("answer")) == 1 and not model.of("score")  # nothing more is asked
    assert "HTTP 401" in result.warnings[0].message


@pytest.mark.parametrize("answer", ["[]", '{"questions": []}', '["  ", ""]'])
def test_a_verifier_that_asks_nothing_keeps_the_finding_unverified(
    snapshot: Snapshot, answer: str
) -> None:
    model = Verifier(questions=answer)
    result = verify(_finding(), snapshot, 4, model)
    assert result.complete and result.score is None and result.questions == ()
    assert [(r.stage, r.status) for r in result.records] == [("verify_questions", "ok")]
    assert len(model.of("questions")) == 1 and not model.of("answer") and not model.of("score")
    [warning] = result.warnings
    assert warning.code == "verification_no_questions" and warning.path == "app/billing.py"
    expected = "the verifier asked no question about Fa1 (app/billing.py:16)"
    assert warning.message.startswith(expected)
    kept = apply_verifications(Finalized(findings=(_finding(),)), [result], 0.75)
    assert kept.complete and kept.findings == (_finding(),) and not kept.dropped
    assert [w.code for w in kept.warnings] == ["verification_no_questions"]


def _verification(finding: Finding, score: int | None, **extra: object) -> Verification:
    record = RequestRecord(stage="verify_score", path=finding.path)
    fields: dict[str, object] = {
        "path": finding.path,
        "fingerprint": finding.fingerprint,
        "questions": tuple(QUESTIONS),
        "answers": ("Yes: line 14 returns 0 for an empty list.", "No."),
        "score": score,
        "reason": "line 14 guards it" if score else "",
        "records": (record,),
    }
    fields.update(extra)
    return Verification.model_validate(fields)


def test_scores_replace_confidence_and_low_ones_are_dropped() -> None:
    kept, low, failed, unasked = (
        _finding(id=f"F{n}", fingerprint=f"{n}" * 64, title=f"finding {n}") for n in range(4)
    )
    finalized = Finalized(findings=(kept, low, failed, unasked))
    results = [
        _verification(kept, 8),
        _verification(low, 2),
        _verification(failed, None, complete=False),
    ]
    out = apply_verifications(finalized, results, 0.75)
    assert [f.id for f in out.findings] == ["F0", "F2", "F3"]
    verified = out.findings[0]
    assert (verified.confidence, verified.model_confidence) == (0.8, 0.9)
    assert verified.verification is not None
    assert (verified.verification.score, verified.verification.questions) == (8, 2)
    assert out.findings[1] == failed and out.findings[2] == unasked  # kept as they were
    [drop] = out.dropped
    assert (drop.reason, drop.title, drop.path) == (DropReason.NOT_VERIFIED, "finding 1", low.path)
    assert drop.detail is not None and "score 2/10 = 0.2 < review.confidence_threshold 0.75" in (
        drop.detail
    )
    assert not out.complete  # the failed verification
    assert len(out.records) == 3


def test_the_threshold_applies_to_the_scaled_score() -> None:
    finding = _finding()
    for score, threshold, kept in ((7, 0.75, False), (8, 0.75, True), (7, 0.7, True)):
        out = apply_verifications(
            Finalized(findings=(finding,)), [_verification(finding, score)], threshold
        )
        assert bool(out.findings) is kept
        assert out.complete


def test_detail_summarises_questions_and_answers_on_one_bounded_line() -> None:
    long_answer = "No. " + "x" * 1000
    result = _verification(_finding(), 3, answers=("Yes: line 14 returns 0.", long_answer))
    detail = verification_detail(result, 0.75)
    assert "\n" not in detail
    assert detail.startswith("verification score 3/10 = 0.3 < review.confidence_threshold 0.75")
    assert f"Q1: {QUESTIONS[0]} A1: Yes: line 14 returns 0." in detail
    assert "reason: line 14 guards it" in detail and "Q2:" in detail and "A2: No. xxx" in detail
    assert len(detail) < 1000


def test_verification_through_a_real_provider(
    wire: WireServer, send_to: SendTo, snapshot: Snapshot
) -> None:
    protocol = "openai"  # the three protocols: tests/flows/test_verify_e2e.py
    wire.script(
        protocol,
        [
            Text(json.dumps(QUESTIONS)),
            ToolCalls(Call("file_read", {"file_path": "app/billing.py", "start_line": 13})),
            Text("No: nothing checks items before line 16."),
            Text("No: no caller in the change guards it."),
            Text('{"score": 8}'),
        ],
    )
    result = verify(_finding(), snapshot, 4, send_to(protocol))
    wire.assert_done()
    assert (result.score, result.tool_calls, result.complete) == (8, 1, True)
    answering = wire.requests(protocol)[1:4]
    for request in answering:
        assert PROBLEM not in json.dumps(request.body) and SUGGESTION not in json.dumps(
            request.body
        )
    assert "return total_price / len(items)" in json.dumps(answering[1].body)  # the tool result
