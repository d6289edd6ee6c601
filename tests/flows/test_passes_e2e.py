"""Whole reviews with independent passes (`review.passes`) through the CLI and the wire server:
`--passes 1` is the review without the option, byte for byte; several passes keep what enough
of them found, drop the rest as `no_agreement`, carry `agreement` into every report, and cost
nothing the second time.

The model is `PassReviewer`: the `n`-th conversation that reports on a file reports the `n`-th
list of findings scripted for it (passes run concurrently, so which pass gets which list is not
fixed, and nothing asserted depends on it).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer, assistant_turns, stage_of
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, Call, RecordedRequest, Reply, ToolCalls, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

PATH = "app/settings.py"
BASE = '"""Settings."""\n\n\ndef load(path):\n    return {}\n'
HEAD = '''"""Settings."""


def load(path):
    handle = open(path)
    data = handle.read()
    return parse(data)


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines())
'''
SPLIT = {
    "severity": "high",
    "category": "correctness",
    "file": PATH,
    "existing_code": '    return dict(line.split("=", 1) for line in text.splitlines())',
    "title": "Lines without '=' crash parse",
    "problem": "ValueError on a line without '='",
    "evidence": "split result unpacked into pairs",
    "suggestion": "skip or report malformed lines",
    "confidence": 0.85,
}
# The same defect as another pass words it.
SPLIT_AGAIN = {**SPLIT, "title": "parse crashes on lines without =", "confidence": 0.8}
NOISE = {
    "severity": "medium",
    "category": "performance",
    "file": PATH,
    "existing_code": "    data = handle.read()",
    "title": "Whole file read into memory",
    "problem": "read() loads the file at once",
    "evidence": "no streaming",
    "suggestion": "iterate over the lines",
    "confidence": 0.8,
}


class PassReviewer(ScriptedReviewer):
    """The `n`-th conversation reporting on a file reports `per_pass[n % len(per_pass)]`."""

    def __init__(self, per_pass: list[list[dict[str, Any]]]) -> None:
        super().__init__({PATH: per_pass[0]})
        self.per_pass = per_pass
        self.reports: Counter[str] = Counter()
        self._counting = threading.Lock()

    def __call__(self, record: RecordedRequest) -> Reply:
        text = json.dumps(record.body, ensure_ascii=False)
        if stage_of(text) == "main" and PATH in text and assistant_turns(record) == 1:
            with self._counting:
                n = self.reports[PATH]
                self.reports[PATH] += 1
            self.stages["main"] += 1
            found = self.per_pass[n % len(self.per_pass)]
            if found:
                return ToolCalls(*(Call("code_comment", {"finding": f}) for f in found))
            return ToolCalls(Call("task_done", {}))
        return super().__call__(record)


def _repo(root: Path) -> GitRepo:
    repo = GitRepo.init(root)
    repo.write(PATH, BASE)
    repo.commit("base")
    repo.write(PATH, HEAD)
    repo.commit("read settings")
    return repo


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, repo: GitRepo, out: str, *flags: str
) -> tuple[int, Path]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    folder = repo.root.parent / out
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    argv += ["--report-dir", str(folder), "--sarif", "report.sarif", "--markdown", "report.md"]
    code = main([*argv, *flags])
    return code, folder


def _bodies(records: list[RecordedRequest]) -> list[str]:
    return sorted(json.dumps(r.body, sort_keys=True) for r in records)


# What differs from one run of the same review to the next: times and durations (the review's
# ID starts with its start).
VOLATILE = (
    re.compile(r"\d{8}T\d{6}Z"),
    re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(Z|\+00:00)"),
    re.compile(r'"duration_ms": \d+'),
    re.compile(r"\| [\d.]+ s \|$", re.M),
)


def _steady(text: str, endpoint: str) -> str:
    """`text` (a report file) with the times and durations and the model server's `endpoint`
    masked."""
    for pattern in VOLATILE:
        text = pattern.sub("<volatile>", text)
    return text.replace(endpoint, "<endpoint>")


def test_one_pass_is_the_review_without_passes_byte_for_byte(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", PassReviewer([[SPLIT]]))
    _repo(repo.root)
    code, plain = _review(monkeypatch, wire, repo, "plain")
    sent = wire.requests()
    # Cached: the one pass is keyed exactly as the review without passes.
    again, _ = _review(monkeypatch, wire, repo, "cached", "--passes", "1")
    assert (code, again, len(wire.requests())) == (1, 1, len(sent))

    # Asked again, of a server of its own (its tool call IDs count from 1 as the first's did).
    with WireServer() as fresh:
        fresh.respond("openai", PassReviewer([[SPLIT]]))
        code, one = _review(monkeypatch, fresh, repo, "one", "--passes", "1", "--no-cache")
        assert code == 1
        assert _bodies(fresh.requests()) == _bodies(sent)
        endpoints = (fresh.base_url("openai"), wire.base_url("openai"))
    assert "agreement" not in (one / "review-report.json").read_text()
    for name in ("review-report.json", "report.sarif", "report.md"):
        theirs = _steady((plain / name).read_text(), endpoints[1])
        assert _steady((one / name).read_text(), endpoints[0]) == theirs, name


def test_three_passes_keep_what_two_found_and_drop_the_rest(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = PassReviewer([[SPLIT, NOISE], [SPLIT_AGAIN], []])
    wire.respond("openai", reviewer)
    _repo(repo.root)
    code, out = _review(monkeypatch, wire, repo, "three", "--passes", "3")
    report = json.loads((out / "review-report.json").read_text())

    assert code == 1 and report["status"] == "complete"
    jsonschema.validate(report, report_schema())
    assert reviewer.reports[PATH] == 3  # one conversation per pass
    [finding] = report["findings"]
    assert (finding["title"], finding["agreement"]) == (SPLIT["title"], "2/3")
    reasons = Counter(d["reason"] for d in report["dropped"])
    assert reasons == {"no_agreement": 1, "duplicate": 1}
    [noise] = [d for d in report["dropped"] if d["reason"] == "no_agreement"]
    assert noise["title"] == NOISE["title"] and "1/3" in noise["detail"]
    sarif = json.loads((out / "report.sarif").read_text())
    [result] = sarif["runs"][0]["results"]
    assert result["properties"]["agreement"] == "2/3"
    assert "found by 2/3 passes" in (out / "report.md").read_text()
    # Each pass asked the model afresh; the two that found something had them filtered.
    assert reviewer.stages["filter"] == 2
    sent = len(wire.requests())
    assert report["usage"]["requests"] == sent

    # An unchanged re-review costs nothing; a lower agreement keeps the noise too.
    code, out = _review(monkeypatch, wire, repo, "again", "--passes", "3", "--min-agreement", "1")
    report = json.loads((out / "review-report.json").read_text())
    assert len(wire.requests()) == sent and report["usage"]["requests"] == 0
    assert sorted(f["agreement"] for f in report["findings"]) == ["1/3", "2/3"]


def test_the_estimate_counts_every_pass(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond("openai", PassReviewer([[SPLIT]]))
    _repo(repo.root)
    estimates = []
    for passes in ("1", "3"):
        _, out = _review(monkeypatch, wire, repo, f"p{passes}", "--passes", passes)
        estimates.append(json.loads((out / "review-report.json").read_text())["estimate"])
    one, three = estimates
    # Every model stage three times (the report rounds each stage's expected requests).
    assert three["range"]["low"]["requests"] == 3 * one["range"]["low"]["requests"]
    for figures in (lambda e: e, lambda e: e["range"]["low"], lambda e: e["range"]["high"]):
        for key in ("requests", "prompt_tokens", "completion_tokens"):
            assert figures(three)[key] == pytest.approx(3 * figures(one)[key], rel=0.05)


def test_each_pass_asks_its_own_model(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    reviewer = PassReviewer([[SPLIT], [SPLIT_AGAIN]])
    wire.respond("openai", reviewer)
    endpoint = wire.base_url("openai")
    (rf_home / "config.yaml").write_text(
        "review:\n  passes: 2\n  pass_models:\n"
        f"    - {{protocol: openai, name: test-model, endpoint: '{endpoint}'}}\n"
        f"    - {{protocol: openai, name: second-model, endpoint: '{endpoint}'}}\n"
    )
    _repo(repo.root)
    code, out = _review(monkeypatch, wire, repo, "models")
    report = json.loads((out / "review-report.json").read_text())

    assert code == 1
    [finding] = report["findings"]
    assert finding["agreement"] == "2/2"
    models = Counter(r.model for r in wire.requests() if stage_of(json.dumps(r.body)) == "main")
    assert set(models) == {"test-model", "second-model"} and models["second-model"] >= 2
    assert report["usage"]["requests"] == len(wire.requests())  # one meter for both models
    assert {r.credential for r in wire.requests()} == {TEST_KEY}  # the model's, same protocol
    assert TEST_KEY not in (out / "review-report.json").read_text()
