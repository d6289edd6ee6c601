"""A review whose passes ask two models at different prices, and a verify model of a third,
through the CLI and the scripted model server: every request is priced at the price of the model
that served it (the report's `usage.by_model`, `usage.cost`, `process[].model`), `--max-cost`
stops the dearer pass where its first request would cross it while the cheaper one finishes, and
the preview prices each pass at its model's price.

Every scripted answer reports the wire server's default usage (12 prompt and 7 completion
tokens), so each model's money is its number of requests times one answer at its price.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.cost.prices import bundled_price
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

PATH = "app/settings.py"
BASE = '"""Settings."""\n\n\ndef load(path):\n    return {}\n'
HEAD = '"""Settings."""\n\n\ndef load(path):\n    handle = open(path)\n    return handle.read()\n'
LEAK = {
    "severity": "high",
    "category": "correctness",
    "file": PATH,
    "existing_code": "    handle = open(path)",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use with open(path) as handle",
    "confidence": 0.9,
}
CHEAP = {"input": 0.5, "output": 1.0}
DEAR = {"input": 10.0, "output": 40.0}
ANSWER = (12, 7)  # prompt and completion tokens each scripted answer reports


def _answer_cost(rates: dict[str, float]) -> float:
    return (ANSWER[0] * rates["input"] + ANSWER[1] * rates["output"]) / 1e6


def _setup(repo: GitRepo, wire: WireServer, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """model.* `test-model` (no price: no pass asks it) and a pass model per pass, each with
    its own price, all on the scripted server."""
    endpoint = wire.base_url("openai")
    (home / "config.yaml").write_text(
        "review:\n  passes: 2\n  pass_models:\n"
        f"    - {{name: cheap-model, endpoint: '{endpoint}', price: {json.dumps(CHEAP)}}}\n"
        f"    - {{name: dear-model, endpoint: '{endpoint}', price: {json.dumps(DEAR)}}}\n"
    )
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", endpoint)
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    repo.write(PATH, BASE)
    repo.commit("base")
    repo.write(PATH, HEAD)
    repo.commit("read settings")


def _review(repo: GitRepo, out: str, *flags: str) -> tuple[int, dict[str, Any]]:
    folder = repo.root.parent / out
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    code = main([*argv, "--report-dir", str(folder), "--concurrency", "1", *flags])
    return code, json.loads((folder / "review-report.json").read_text())


@pytest.mark.usefixtures("prefect_harness")
def test_each_request_is_priced_at_its_model_and_max_cost_stops_the_dearer_pass(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    wire.respond("openai", ScriptedReviewer({PATH: [LEAK]}))
    _setup(repo, wire, rf_home, monkeypatch)
    code, report = _review(repo, "priced", "--verify", "--verify-model", "gpt-4o-mini")

    assert code == 1 and report["status"] == "complete"
    jsonschema.validate(report, report_schema())
    [finding] = report["findings"]
    assert finding["agreement"] == "2/2" and finding["verification"] is not None
    sent = Counter(r.model for r in wire.requests())
    assert set(sent) == {"cheap-model", "dear-model", "gpt-4o-mini"}  # model.* asked nothing
    mini = bundled_price("gpt-4o-mini")
    assert mini is not None
    rates = {"cheap-model": CHEAP, "dear-model": DEAR, "gpt-4o-mini": mini.price.model_dump()}
    by_model = {row["model"]: row for row in report["usage"]["by_model"]}
    assert set(by_model) == set(sent)
    for name, row in by_model.items():
        assert row["requests"] == sent[name]
        assert (row["prompt_tokens"], row["completion_tokens"]) == (
            sent[name] * ANSWER[0],
            sent[name] * ANSWER[1],
        )
        assert row["cost"] == pytest.approx(sent[name] * _answer_cost(rates[name]), abs=2e-6)
        assert row["currency"] == "USD"
    assert report["usage"]["cost"] == pytest.approx(sum(r["cost"] for r in by_model.values()))
    records = Counter(r["model"] for r in report["process"] if not r["reused"])
    assert records == sent  # each record names the model that served it
    verify_models = {r["model"] for r in report["process"] if r["stage"].startswith("verify_")}
    assert verify_models == {"gpt-4o-mini"}
    # The estimate priced each pass at its model's price, verification at the verify model's.
    estimate = {row["model"]: row for row in report["estimate"]["by_model"]}
    assert (estimate["cheap-model"]["passes"], estimate["dear-model"]["passes"]) == ([1], [2])
    ratio = estimate["dear-model"]["cost"] / estimate["cheap-model"]["cost"]
    assert ratio > 10  # the same figures at the dearer price

    # A cost budget the cheap pass fits in and the dear pass's first request crosses (at
    # --concurrency 1 nothing else is in flight): the cheap pass finishes, the dear one sends
    # nothing, and what was spent is the cheap model's.
    before = len(wire.requests())
    code, stopped = _review(repo, "stopped", "--no-cache", "--max-cost", "0.005")
    assert code == 2 and stopped["status"] == "incomplete"
    jsonschema.validate(stopped, report_schema())
    sent = Counter(r.model for r in wire.requests()[before:])
    assert set(sent) == {"cheap-model"}
    refused = [r for r in stopped["process"] if r["status"] == "not_sent"]
    assert refused and {r["model"] for r in refused} == {"dear-model"}
    for record in refused:  # refused where it would cross: nothing spent by then is near it
        spent, more = map(float, re.findall(r"(\d+\.\d+) (?:spent|more)", record["error"]))
        assert spent <= 0.005 < spent + more
    cheap = [r for r in stopped["process"] if r["model"] == "cheap-model"]
    assert cheap and all(r["status"] == "ok" for r in cheap)
    [row] = stopped["usage"]["by_model"]
    assert row["model"] == "cheap-model" and row["requests"] == sent["cheap-model"]
    assert stopped["budget"]["spent_cost"] == pytest.approx(row["cost"], abs=2e-6)
    assert stopped["usage"]["cost"] == pytest.approx(sent["cheap-model"] * _answer_cost(CHEAP))


def test_the_preview_prices_each_pass_at_its_model(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _setup(repo, wire, rf_home, monkeypatch)
    out = repo.root.parent / "preview.json"
    args = ["review", "--preview", "--repo", str(repo.root), "--commit", "HEAD", "--verify"]
    assert main([*args, "--verify-model", "gpt-4o-mini", "--json", str(out)]) == 0
    estimate = json.loads(out.read_text())["estimate"]
    rows = {row["model"]: row for row in estimate["by_model"]}
    assert list(rows) == ["cheap-model", "dear-model", "gpt-4o-mini"]
    cheap, dear = rows["cheap-model"], rows["dear-model"]
    assert cheap["prompt_tokens"] == dear["prompt_tokens"] > 0  # one pass's figures each
    for row, rates in ((cheap, CHEAP), (dear, DEAR)):
        cost = row["prompt_tokens"] * rates["input"] + row["completion_tokens"] * rates["output"]
        assert row["cost"] == pytest.approx(cost / 1e6, abs=2e-6)
    assert estimate["cost"] == pytest.approx(sum(r["cost"] for r in rows.values()), abs=1e-5)
    assert wire.requests() == []  # a preview asks no model
    # With --max-cost the three models' prices are summed; a pass model without a price is
    # one line and exit 2, as model.* without one is.
    text = capsys.readouterr().out
    assert "cheap-model (pass 1) 0.5/1 USD (configured)" in text
    (rf_home / "config.yaml").write_text(
        (rf_home / "config.yaml").read_text().replace(f", price: {json.dumps(DEAR)}", "")
    )
    assert main([*args, "--verify-model", "gpt-4o-mini", "--max-cost", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "needs the price of model 'dear-model'" in err[0]
    assert "set the price of review.pass_models entry 2" in err[0]
