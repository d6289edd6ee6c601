"""The harness end to end on the two tiny cases: fetched through file://, reviewed by the real
CLI, judged, scored; then replayed from the cassettes without any request."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.quality.run import main
from tests.quality.tiny import TinyModel, build, install_fake_pr_agent
from tests.wire_server import TEST_KEY, WireServer


def _flags(root: Path, wire: WireServer, *extra: str) -> list[str]:
    return [
        "--cases",
        str(root / "cases.json"),
        "--protocol",
        "openai",
        "--model",
        "test-model",
        "--endpoint",
        wire.base_url("openai"),
        "--cache-dir",
        str(root / "cache"),
        "--cassettes",
        str(root / "cassettes"),
        "--out",
        str(root / "out"),
        "--price",
        "1,2",
        "--judge-price",
        "0.5,1",
        *extra,
    ]


def _counts(scores: dict[str, object]) -> tuple[object, ...]:
    return tuple(scores[k] for k in ("caught", "golden", "matched_findings", "findings"))


def _check_live(data: dict[str, Any], markdown: str) -> None:
    """The numbers tests/quality/tiny.py promises, exactly."""
    by_id = {case["id"]: case for case in data["cases"]}
    window, judged = by_id["tiny-window"]["scores"], by_id["tiny-judged"]["scores"]
    assert _counts(window) == (1, 1, 1, 2) and (window["precision"], window["recall"]) == (0.5, 1)
    assert window["f1"] == pytest.approx(2 / 3)
    assert _counts(judged) == (1, 2, 1, 1) and (judged["precision"], judged["recall"]) == (1, 0.5)
    total = data["total"]
    assert (total["precision"], total["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert total["f1"] == pytest.approx(2 / 3)
    assert [v["by"] for v in by_id["tiny-window"]["verdicts"]] == ["line-window"]
    assert total["cost_usd"] is not None and total["tokens"]["judge_prompt"] > 0
    assert "| **total** | 3 | 2 | 3 | 2 | 66.7% | 66.7% | 66.7% |" in markdown
    assert _counts(data["peer_total"]) == (1, 3, 1, 2)  # pr-agent, judged the same way
    assert by_id["tiny-judged"]["peer"]["scores"]["precision"] == 0.5
    assert by_id["tiny-window"]["peer"]["scores"]["recall"] == 0.0


@pytest.mark.usefixtures("prefect_harness")
def test_tiny_cases_are_scored_exactly_and_replayed_without_a_request(
    tmp_path: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    build(tmp_path)
    model = TinyModel()
    wire.respond("openai", model)
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    fake = install_fake_pr_agent(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    assert main(_flags(tmp_path, wire, "--peer", "pr-agent")) == 0

    data = json.loads((tmp_path / "out" / "results.json").read_text())
    _check_live(data, (tmp_path / "out" / "results.md").read_text())
    assert model.extracted == 2 and model.judged == 2 + 4  # reviewflow 2x1, pr-agent 2x2 pairs
    cassette = json.loads((tmp_path / "cassettes" / "tiny-judged.json").read_text())
    assert {e["stage"] for e in cassette["exchanges"]} == {"review", "judge", "extract"}
    assert TEST_KEY not in json.dumps(cassette)

    sent = len(wire.requests())
    replay_out = tmp_path / "replayed"
    flags = _flags(tmp_path, wire, "--replay", "--peer", "pr-agent")
    flags[flags.index("--out") + 1] = str(replay_out)
    assert main(flags) == 0
    assert len(wire.requests()) == sent  # nothing asked of any model
    again = json.loads((replay_out / "results.json").read_text())
    assert again["total"] == data["total"] | {"seconds": again["total"]["seconds"]}
    assert again["peer_total"] == data["peer_total"]
    assert [c["verdicts"] for c in again["cases"]] == [c["verdicts"] for c in data["cases"]]
