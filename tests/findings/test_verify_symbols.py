"""The symbol tools in verification's answers (plain functions on a real repository and a real
code index; the model is a scripted `Send`): offered with a loader of the index, answered from
it, loaded once per finding; without one, not offered and refused; the estimate counts them."""

from __future__ import annotations

from pathlib import Path

from reviewflow.context.query import CodeIndex
from reviewflow.cost import estimate as est
from reviewflow.cost import prompts
from reviewflow.findings.models import Finding
from reviewflow.findings.verify import verify
from reviewflow.findings.verify_answer import answer_request
from reviewflow.providers.messages import ModelRequest, ModelResponse, ToolCall, ToolResultMessage
from reviewflow.review import tools
from reviewflow.review.reader import Snapshot
from reviewflow.review.symbols import SymbolSource
from reviewflow.review.tokens import estimate_request
from tests.findings.conftest import BILLING_BASE, BILLING_NEW, LINES, commit_change
from tests.findings.test_verify import Verifier, _finding, _response
from tests.gitutil import GitRepo

REPORT = (
    "from app.billing import average_price\n\n\ndef summary(items):\n"
    "    return average_price(items)\n"
)
ASK = {"name": "average_price", "file_path": "app/billing.py"}


def _repo(repo: GitRepo) -> Snapshot:
    commit_change(
        repo,
        {"app/billing.py": BILLING_BASE, "app/report.py": "x = 1\n"},
        {"app/billing.py": BILLING_NEW, "app/report.py": REPORT},
    )
    return Snapshot(repo_root=str(repo.root), ref=repo.git("rev-parse", "HEAD").strip())


def _ask_then_answer(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolResultMessage) for m in request.messages):
        return _response("", ToolCall(id="s1", name="symbol_references", arguments=ASK))
    return _response("No: app/report.py:5 calls it with any list.")


def _tool_results(model: Verifier) -> list[str]:
    return [
        message.content
        for request in model.of("answer")
        for message in request.messages
        if isinstance(message, ToolResultMessage)
    ]


def test_the_answers_ask_the_index_which_is_loaded_once_per_finding(
    repo: GitRepo, tmp_path: Path
) -> None:
    snapshot = _repo(repo)
    source = SymbolSource(store_dir=str(tmp_path / "index"))
    said: list[str] = []
    loads: list[int] = []
    load = source.loader(snapshot, said.append)

    def counted() -> CodeIndex:
        loads.append(1)
        return load()

    model = Verifier(answer=_ask_then_answer)
    result = verify(_finding(), snapshot, 4, model, counted)

    assert result.score == 9 and result.complete
    names = [d.name for d in tools.answering(True)]
    assert names == ["file_read", "code_search", "file_find", *tools.SYMBOL_TOOLS]
    first = [r for r in model.of("answer") if not r.messages[1:]]
    assert [[d.name for d in r.tools] for r in first] == [names, names]  # each question
    assert all("symbol_definition says where a name is defined" in r.system for r in first)
    results = _tool_results(model)
    assert any("app/report.py:5: return average_price(items)  [in def summary(items); call, "
               "confirmed]" in text for text in results)  # fmt: skip
    # two questions, one index load; the second question's same call is the cached answer
    assert len(loads) == 1 and result.tool_calls == 2
    [line] = said
    assert line.startswith(
        f"code index for the symbol tools: 2 source files from {source.store_dir}"
    )
    assert "(2 parsed, 0 reused)" in line


def test_without_a_loader_the_symbol_tools_are_not_offered_and_are_refused(
    repo: GitRepo,
) -> None:
    snapshot = _repo(repo)
    model = Verifier(answer=_ask_then_answer)
    result = verify(_finding(), snapshot, 4, model)

    first = [r for r in model.of("answer") if not r.messages[1:]]
    assert [[d.name for d in r.tools] for r in first] == [list(tools.CONTEXT_TOOLS)] * 2
    assert all("symbol" not in r.system for r in first)
    [refusal, *_] = _tool_results(model)
    assert (
        refusal == "error: unknown tool 'symbol_references': use file_read, code_search, file_find"
    )
    assert result.score == 9  # the model answered all the same


def test_the_estimate_counts_what_the_symbol_tools_add_to_each_answer(repo: GitRepo) -> None:
    """The estimate's answer request grows, with the symbol tools, by what the real answering
    request grows by: their definitions and their line of the system prompt."""
    finding: Finding = _finding(start_line=LINES["divide"])
    real = [
        estimate_request(answer_request("q?", finding, [], tools.answering(on), on))
        for on in (False, True)
    ]
    estimated = [prompts.verify_prompts("app/billing.py", 300, 400, on)[1] for on in (False, True)]
    grown = real[1] - real[0]  # tokens are characters / 4 rounded up: within one of each other
    assert grown > 200 and abs((estimated[1] - estimated[0]) - grown) <= 1
    off, on = (est.verification("app/billing.py", 500, 4, symbols) for symbols in (False, True))
    answers = off.requests - 2  # all but the questions and the score offer the tools
    assert on.requests == off.requests and answers == 6
    assert abs((on.prompt_tokens - off.prompt_tokens) - grown * answers) <= answers
