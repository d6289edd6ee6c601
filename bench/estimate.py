"""Estimate vs actual: the cost estimate a review makes before its first request, against what
the review then sent, on the scripted model, for the 3-file change of `bench/prompt_size.py`
and the 40-file change of `bench/review_concurrency.py`.

Target (issue 21): requests and prompt tokens within ±25% of the actual.

`--verify` (issue 28): the same reviews with `--verify`, where what the review finds drives the
cost: the 3-file change with nothing found, and the settings change of the tests
(`tests/flows/test_review_e2e.py`) where the scripted model reports two findings on a small
change. Target: the actual requests within the estimate's range (`range.low`–`range.high`).

Each review runs whole, through the CLI (`reviewflow review --no-warm`, the managed local
Prefect server of a fresh home), against the scripted reviewer of the tests (`ScriptedReviewer`:
it reads the file, reports its findings, ends). The scripted model reports as each answer's
usage the prompt it received, measured from the request body with the chunker's counter (about
four characters per token: system, messages, tool calls and results, tool definitions), so the
report's `usage` is what a provider with that tokenizer would report; the comparison then
measures the estimator's own assumptions (rounds, stages, conversation growth, compression),
not a tokenizer's difference from ours. Both figures come from the review's JSON report:
`estimate` beside `usage`.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")

TARGET = 0.25


def body_tokens(body: dict[str, Any]) -> int:
    """The prompt of an OpenAI Chat Completions body, counted as `estimate_request` counts a
    request: every message's text, tool calls and tool call IDs, and each tool's definition."""
    chars = 0
    for message in body.get("messages", []):
        content = message.get("content") or ""
        chars += len(content if isinstance(content, str) else json.dumps(content))
        for call in message.get("tool_calls") or []:
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
        chars += len(message.get("tool_call_id") or "")
    for tool in body.get("tools", []):
        chars += len(json.dumps(tool["function"], separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


def metered(findings: dict[str, list[dict[str, Any]]]) -> Any:
    """The scripted reviewer, each answer reporting the prompt it got as its usage."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import RecordedRequest, Reply, Text, ToolCalls, WireUsage

    class Metered(ScriptedReviewer):
        def __call__(self, record: RecordedRequest) -> Reply:
            reply = super().__call__(record)
            prompt = body_tokens(record.body)
            if isinstance(reply, ToolCalls):
                answer = sum(len(json.dumps(c.arguments)) for c in reply.calls) + len(reply.text)
                usage = WireUsage(prompt=prompt, completion=math.ceil(answer / 4))
                return ToolCalls(*reply.calls, text=reply.text, usage=usage)
            if isinstance(reply, Text):
                usage = WireUsage(prompt=prompt, completion=math.ceil(len(reply.text) / 4))
                return Text(reply.text, usage=usage)
            return reply

    return Metered(findings)


def three_files(root: Path) -> list[str]:
    """`bench/prompt_size.py`'s change: three modules of seven functions, two lines each."""
    from bench.prompt_size import FILES, source
    from tests.gitutil import GitRepo

    repo = GitRepo.init(root)
    for path in FILES:
        repo.write(path, source(path, 7))
    repo.commit("base")
    for path in FILES:
        repo.write(path, source(path, 7).replace("rate=0.3", "rate=0.35").replace("+ 5", "- 5"))
    repo.commit("change")
    return list(FILES)


def forty_files(root: Path) -> list[str]:
    """`bench/review_concurrency.py`'s change: one line in each of 40 files."""
    from bench.review_concurrency import make_change, paths

    make_change(root)
    return paths()


FINDING = {
    "severity": "high",
    "category": "correctness",
    "existing_code": "    return total",
    "title": "Unrounded total",
    "problem": "the total is not rounded",
    "evidence": "return total",
    "suggestion": "round it",
    "confidence": 0.9,
}


def planned_file(root: Path) -> list[str]:
    """Not a target: one file of 80 changed lines (planned) where the scripted model still
    reads once, reports a finding and ends, while the estimate expects a real model to look
    further (6 context calls): how far the assumptions are from a model that does not."""
    from tests.gitutil import GitRepo

    repo = GitRepo.init(root)
    base = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(10))
    repo.write("app/big.py", base)
    repo.commit("base")
    grown = "".join(f"def g{i}(x):\n    total = x * {i}\n    return total\n" for i in range(27))
    repo.write("app/big.py", base + grown)
    repo.commit("change")
    return ["app/big.py"]


def settings_change(root: Path) -> list[str]:
    """The settings change of the end-to-end tests (two findings reported on it)."""
    from tests.flows.test_review_e2e import _repo

    _repo(root)
    return ["app/settings.py"]


def findings_of(make: Any, files: list[str]) -> dict[str, list[dict[str, Any]]]:
    """What the scripted model reports on each file of the change `make` built."""
    if make is planned_file:
        return {path: [{**FINDING, "file": path}] for path in files}
    if make is settings_change:
        from tests.flows.test_review_e2e import SPLIT
        from tests.flows.test_verify_e2e import LEAK

        return {"app/settings.py": [SPLIT, LEAK]}
    return {path: [] for path in files}


def review(name: str, make: Any, work: Path, *flags: str) -> dict[str, Any]:
    from flows.cli.main import main as cli
    from tests.wire_server import TEST_KEY, WireServer

    repo = work / name
    files = make(repo)
    out = work / f"{name}-out"
    with WireServer() as wire:
        wire.respond("openai", metered(findings_of(make, files)))
        os.environ.update(
            {
                "REVIEWFLOW_MODEL_NAME": "gpt-4o-mini",
                "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
                "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
            }
        )
        args = [
            "review",
            "--repo",
            str(repo),
            "--commit",
            "HEAD",
            "--no-warm",
            "--no-cache",
            *flags,
        ]
        code = cli([*args, "--console", "off", "--no-progress", "--report-dir", str(out)])
        sent = len(wire.requests())
    report: dict[str, Any] = json.loads((out / "review-report.json").read_text())
    assert code in (0, 1) and report["usage"]["requests"] == sent, (code, report["usage"], sent)
    return report


def error(estimate: float, actual: float) -> float:
    return (estimate - actual) / actual


def compare(name: str, make: Any, work: Path) -> bool:
    """One case's estimate against the actual: whether it meets the ±25% target (where one)."""
    report = review(name, make, work)
    estimate, usage = report["estimate"], report["usage"]
    rows = [
        ("requests", estimate["requests"], usage["requests"]),
        ("prompt tokens", estimate["prompt_tokens"], usage["prompt_tokens"]),
        ("completion tokens", estimate["completion_tokens"], usage["completion_tokens"]),
    ]
    print(f"{name} change ({len(report['estimate']['files'])} file(s)):")
    met = True
    for label, guess, actual in rows:
        off = error(guess, actual)
        target = label != "completion tokens" and make is not planned_file
        met &= not target or abs(off) <= TARGET
        mark = ("ok" if abs(off) <= TARGET else "OFF") if target else "(recorded)"
        print(f"  {label}: estimate {guess:,}, actual {actual:,}: {off:+.1%} {mark}")
    return met


def in_range(name: str, make: Any, work: Path) -> bool:
    """One `--verify` case: whether the actual requests fall within the estimate's range."""
    report = review(f"{name}-verify", make, work, "--verify")
    estimate, actual = report["estimate"], report["usage"]["requests"]
    low, high = (estimate["range"][end]["requests"] for end in ("low", "high"))
    inside = low <= actual <= high
    findings = estimate["findings"]
    print(
        f"{name} change, --verify: estimate {estimate['requests']:.1f} requests, range "
        f"{low:.1f}–{high:.1f} ({findings['expected']:g} expected findings, 0–"
        f"{findings['high']:g}), actual {actual} ({report['stats']['findings']} findings kept, "
        f"{len(report['dropped'])} dropped): {'in range' if inside else 'OUT of range'}"
    )
    return inside


def main() -> None:
    from flows.local.control import stop_server

    verify = sys.argv[1:] == ["--verify"]
    work = Path(tempfile.mkdtemp(prefix="rf-bench-estimate-"))
    home = work / "home"
    os.environ["REVIEWFLOW_HOME"] = str(home)
    met = True
    try:
        if verify:
            for name, make in (("3-file", three_files), ("settings", settings_change)):
                met &= in_range(name, make, work)
        else:
            cases = (("3-file", three_files), ("40-file", forty_files), ("planned", planned_file))
            for name, make in cases:
                met &= compare(name, make, work)
    finally:
        stop_server(home)
    target = (
        "actual requests within the range"
        if verify
        else f"±{TARGET:.0%} on requests and prompt tokens"
    )
    print(f"target {target}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
