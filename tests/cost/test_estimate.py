"""The estimator as plain functions: its figures follow the real prompts and the loop's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewflow.config import Config, ModelPrice, ReviewSettings
from reviewflow.cost import estimate as est
from reviewflow.cost.prices import PriceInfo
from reviewflow.cost.review import jobs_estimate, scope_estimate
from reviewflow.cost.sizes import file_sizes
from reviewflow.cost.text import estimate_line, estimate_table
from reviewflow.providers.messages import ModelRequest, ModelResponse, ToolCall
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import FileJob, file_jobs, snapshot_of
from reviewflow.review.loop import review_chunk
from reviewflow.review.packs import context_packs
from reviewflow.review.reader import Snapshot
from reviewflow.review.symbols import symbol_loader, symbol_source
from reviewflow.review.tokens import estimate_request
from reviewflow.select.scope import Scope, collect, select
from tests.gitutil import GitRepo

MODULE = "".join(f"def step_{i}(items):\n    return sum(items) * {i}\n\n\n" for i in range(12))


def _scope(repo: GitRepo, changes: dict[str, str]) -> Scope:
    for path in changes:
        repo.write(path, MODULE)
    repo.commit("base")
    for path, text in changes.items():
        repo.write(path, text)
    sha = repo.commit("change")
    request = ReviewRequest.from_flags(str(repo.root), commit=sha, home=str(repo.root.parent))
    return select(collect(request, 3), request, 1 << 20)


def _home(repo: GitRepo) -> str:
    """A reviewflow home beside the repository (the code index is kept there)."""
    return str(repo.root.parent / "home")


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(
        id=f"call-{name}", name=name, arguments=arguments, arguments_json=json.dumps(arguments)
    )


def test_a_small_file_is_a_read_and_an_end_measured_on_the_real_prompts(repo: GitRepo) -> None:
    """The scripted session (read the file, then end) sends what the estimate expected:
    two main requests, prompt tokens within 10% of the estimate."""
    scope = _scope(repo, {"app.py": MODULE.replace("* 3", "* 4")})
    settings = ReviewSettings()
    [job] = file_jobs(scope, settings, "en-US")
    sent: list[ModelRequest] = []
    answers = iter([(_call("file_read", file_path="app.py"),), (_call("task_done"),)])

    def send(request: ModelRequest) -> ModelResponse:
        sent.append(request)
        return ModelResponse(tool_calls=next(answers))

    snapshot = snapshot_of(scope)
    symbols = symbol_loader(symbol_source(scope.change, settings, _home(repo)), snapshot)
    review_chunk(job, 0, None, snapshot, settings, send, symbols)  # as review.context on sends
    size = file_sizes(snapshot_of(scope), ["app.py"])["app.py"]
    figures = est.estimate_file(job, size, settings)
    assert set(figures.stages) == {"main", "relocate", "filter"}  # no plan below 50 lines
    assert figures.stages["main"].requests == len(sent) == 2
    actual = sum(estimate_request(request) for request in sent)
    assert figures.stages["main"].prompt_tokens == pytest.approx(actual, rel=0.10)
    assert figures.stages["main"].prompt_tokens > 2 * estimate_request(sent[0]) - 1


def test_a_large_change_is_planned_investigates_more_and_is_more_likely_to_have_findings(
    repo: GitRepo,
) -> None:
    big = "".join(f"def grown_{i}(x):\n    return x + {i}\n" for i in range(40))
    scope = _scope(repo, {"small.py": MODULE.replace("* 3", "* 4"), "big.py": MODULE + big})
    jobs = {job.path: job for job in file_jobs(scope, ReviewSettings(), "en-US")}
    small = est.estimate_file(jobs["small.py"], 1000, ReviewSettings())
    large = est.estimate_file(jobs["big.py"], 5000, ReviewSettings())
    assert "plan" not in small.stages and large.stages["plan"].requests == 1
    assert jobs["big.py"].changed_lines == 80
    # 80 changed lines: ceil(80 / 15) = 6 context calls, then the last round
    assert large.stages["main"].requests == 7
    # findings per changed line: 80 x 0.025 = 2 expected, 2 changed lines 0.05
    assert est.expected_findings(jobs["big.py"]) == pytest.approx(2.0)
    assert large.stages["filter"].requests == pytest.approx(0.8)  # filtered, when it has any
    assert small.stages["filter"].requests == pytest.approx(0.05)
    # the range's high end: 0.067 a line, at least 2 a file
    assert est.expected_findings(jobs["big.py"], high=True) == pytest.approx(80 * 0.067)
    assert est.expected_findings(jobs["small.py"], high=True) == 2.0


def test_the_token_guard_and_compression_bound_a_long_session(repo: GitRepo) -> None:
    big = "".join(f"def grown_{i}(x):\n    return x + {i}\n" for i in range(100))
    scope = _scope(repo, {"big.py": MODULE + big})
    settings = ReviewSettings(max_chunk_tokens=20_000, max_context_tool_calls=30)
    [job] = file_jobs(scope, settings, "en-US")
    main, compress = est.chunk_session(job, 0, 4000, settings)  # each read: 4,000 tokens
    # 200 changed lines: 14 context calls and the last round, the conversation compressed
    # each time it reaches 60% of 20k, so every round stays under the guard (80%)
    assert main.requests == 15 and compress.requests >= 3
    assert main.prompt_tokens < 15 * 0.8 * settings.max_chunk_tokens
    assert compress.completion_tokens == compress.requests * est.COMPLETION["compress"]
    # a chunk whose first request is already over the guard sends nothing (token_limit_reached)
    tight = ReviewSettings(max_chunk_tokens=1000)
    [job] = file_jobs(scope, tight, "en-US")[:1]
    assert est.chunk_session(job, 0, 4000, tight)[0].requests == 0


def test_verification_and_localization_are_added_when_on(repo: GitRepo) -> None:
    big = "".join(f"def grown_{i}(x):\n    return x + {i}\n" for i in range(40))
    scope = _scope(repo, {"big.py": MODULE + big})
    plain = Config()
    verified = Config.model_validate({"review": {"verify": True}, "output": {"language": "de"}})
    off, on = (
        scope_estimate(scope, plain, home=_home(repo)),
        scope_estimate(scope, verified, home=_home(repo)),
    )
    assert "verify" not in off["by_stage"] and "localize" not in off["by_stage"]
    # 80 changed lines: 2 expected findings, each: questions, 3 x (a context call + the
    # answer), score
    assert on["findings"] == {"expected": 2.0, "low": 0, "high": 5.4}
    assert on["by_stage"]["verify"]["requests"] == pytest.approx(2 * 8, abs=0.1)
    assert on["by_stage"]["localize"]["requests"] == pytest.approx(1.0)
    assert on["requests"] > off["requests"] and on["prompt_tokens"] > off["prompt_tokens"]
    # the range: nothing found (plan and main only) to the high end's 5.36 findings verified,
    # filtered (0.8), relocated (0.2) and localized (1)
    base = sum(on["by_stage"][s]["requests"] for s in ("plan", "main"))
    assert on["range"]["low"]["requests"] == pytest.approx(base, abs=0.1)
    high = base + 5.36 * 8 + 0.8 + 0.2 + 1
    assert on["range"]["high"]["requests"] == pytest.approx(high, abs=0.1)
    assert off["range"]["high"]["requests"] == pytest.approx(base + 1.0, abs=0.1)


def test_a_small_verified_change_shows_the_range_the_findings_make(repo: GitRepo) -> None:
    """Two changed lines are expected to get 0.05 findings, so the estimate is about the main
    stage; with `--verify` two findings would cost 16 more requests: the line says so."""
    scope = _scope(repo, {"app.py": MODULE.replace("* 3", "* 4")})
    priced = {"name": "house", "price": {"input": 1, "output": 1}}
    verified = Config.model_validate({"model": priced, "review": {"verify": True}})
    record = scope_estimate(scope, verified, home=_home(repo))
    assert record["requests"] < 3 and record["findings"]["high"] == 2.0
    assert record["range"]["high"]["requests"] == pytest.approx(2 + 2 * 8 + 1, abs=0.1)
    line = estimate_line(record)
    assert "; with 0–2 findings: 2–19 requests, $" in line
    # without verification the findings move the review little: no range on the line
    assert "findings" not in estimate_line(
        scope_estimate(scope, Config(model=priced), home=_home(repo))
    )


def test_money_follows_the_price_and_is_none_without_one(repo: GitRepo) -> None:
    scope = _scope(repo, {"app.py": MODULE.replace("* 3", "* 4")})
    jobs = file_jobs(scope, ReviewSettings(), "en-US")
    price = PriceInfo(price=ModelPrice(input=2.0, output=10.0), source="config")
    priced = est.estimate_review(jobs, {}, ReviewSettings(), "en-US", price)
    total = priced.total
    expected = (total.prompt_tokens * 2.0 + total.completion_tokens * 10.0) / 1e6
    assert priced.cost == pytest.approx(expected)
    assert est.estimate_review(jobs, {}, ReviewSettings(), "en-US", None).cost is None


def test_the_report_record_and_the_flow_estimate_agree(repo: GitRepo) -> None:
    scope = _scope(repo, {"a.py": MODULE.replace("* 3", "* 4"), "b.py": MODULE + "x = 1\n"})
    config = Config.model_validate({"model": {"name": "gpt-4o"}})
    packs = context_packs(scope, snapshot_of(scope), config.review, _home(repo))  # the flow's
    jobs: list[FileJob] = file_jobs(scope, config.review, "en-US", None, packs)
    record = jobs_estimate(jobs, snapshot_of(scope), config)
    assert record == scope_estimate(scope, config, home=_home(repo))
    assert record["files"][0]["context_tokens"] == packs["a.py"].tokens > 0
    assert record["model"] == "gpt-4o" and record["price"]["as_of"]
    assert record["requests"] == pytest.approx(sum(f["requests"] for f in record["files"]), abs=0.1)
    assert sum(s["prompt_tokens"] for s in record["by_stage"].values()) == record["prompt_tokens"]
    for item in record["files"]:  # each file's own stages add up to its total
        assert "main" in item["by_stage"]
        assert sum(s["prompt_tokens"] for s in item["by_stage"].values()) == item["prompt_tokens"]


def test_read_tokens_follow_the_file_size_and_the_tool_cap() -> None:
    assert est.read_tokens(None) == est.DEFAULT_READ_TOKENS
    assert est.read_tokens(400) < est.read_tokens(4000) < est.read_tokens(400_000)
    assert est.read_tokens(10_000_000) == est.read_tokens(400_000)  # 500 lines / 32 KiB at most


def test_file_sizes_of_the_working_tree_and_of_a_ref(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    sha = repo.commit("base")
    repo.write("a.py", "x = 10\n")
    tree = snapshot_of_ref(repo, None)
    assert file_sizes(tree, ["a.py", "gone.py"]) == {"a.py": 7, "gone.py": None}
    assert file_sizes(snapshot_of_ref(repo, sha), ["a.py", "gone.py"]) == {
        "a.py": 6,
        "gone.py": None,
    }


def snapshot_of_ref(repo: GitRepo, ref: str | None) -> Snapshot:
    return Snapshot(repo_root=str(repo.root), ref=ref)


def test_the_budget_verdict_counts_tokens_and_money(repo: GitRepo) -> None:
    scope = _scope(repo, {"app.py": MODULE.replace("* 3", "* 4")})
    priced = {"name": "house", "price": {"input": 1000, "output": 1000}}  # ~4 per review
    roomy = Config.model_validate({"model": priced, "review": {"max_cost": 100}})
    tight = Config.model_validate({"model": priced, "review": {"max_cost": 1}})
    tokens = Config.model_validate({"model": priced, "review": {"max_tokens": 1000}})
    assert estimate_line(scope_estimate(scope, roomy, home=_home(repo))).endswith(
        "; fits the budget of $100.00"
    )
    assert "does NOT fit the budget of $1.00" in estimate_line(
        scope_estimate(scope, tight, home=_home(repo))
    )
    record = scope_estimate(scope, tokens, home=_home(repo))
    assert record["budget"] == {
        "max_tokens": 1000,
        "max_cost": None,
        "fits": False,
        "fits_high": False,
    }
    assert f", ~${record['cost']:.2f} (model.price); does NOT fit" in estimate_line(record)


def test_the_context_pack_is_counted_in_every_main_request(repo: GitRepo) -> None:
    """With `review.context` on, each main request's prompt carries the file's pack: the
    file's main prompt tokens grow by at least the pack's tokens per main request."""
    callers = "from app import step_3\n\n\ndef use():\n    return step_3([1])\n"
    repo.write("caller.py", callers)
    repo.commit("a caller")
    scope = _scope(repo, {"app.py": MODULE.replace("* 3", "* 4")})
    on = scope_estimate(scope, Config(), home=_home(repo))
    off = scope_estimate(scope, Config(review={"context": "off"}), home=_home(repo))
    (file_on,), (file_off,) = on["files"], off["files"]
    assert file_off["context_tokens"] == 0 and off["context_tokens"] == 0
    pack = file_on["context_tokens"]
    assert pack > 0 and on["context_tokens"] == pack
    main_on, main_off = file_on["by_stage"]["main"], file_off["by_stage"]["main"]
    assert main_on["requests"] == main_off["requests"] >= 1
    grown = main_on["prompt_tokens"] - main_off["prompt_tokens"]
    assert grown >= pack * int(main_on["requests"])
    table = estimate_table(on, ["app.py"])
    assert table[0].split()[:5] == ["file", "requests", "prompt", "context", "completion"]
    assert "context" not in estimate_table(off, ["app.py"])[0]
