"""A run's results: JSON (every case, every verdict) and a Markdown table (per case, total)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.quality.harness import CaseResult
from bench.quality.score import Counts


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens: review input, review output, judge input, judge output."""

    review_in: float | None = None
    review_out: float | None = None
    judge_in: float | None = None
    judge_out: float | None = None

    def cost(self, tokens: dict[str, int]) -> float | None:
        parts = [
            (self.review_in, tokens["review_prompt"]),
            (self.review_out, tokens["review_completion"]),
            (self.judge_in, tokens["judge_prompt"]),
            (self.judge_out, tokens["judge_completion"]),
        ]
        if any(price is None for price, _ in parts):
            return None
        return sum((price or 0.0) * n / 1_000_000 for price, n in parts)


def case_json(result: CaseResult, prices: Prices) -> dict[str, Any]:
    tokens = result.tokens()
    review = result.review
    return {
        "id": result.case.id,
        "repo": result.case.repo,
        "url": result.case.url,
        "base": result.base,
        "head": result.head,
        "error": result.error,
        "judge_errors": sum(1 for v in result.verdicts if v.error),
        "scores": result.counts.as_json() if result.counts else None,
        "tokens": tokens,
        "cost_usd": prices.cost(tokens),
        "seconds": {
            "review": round(review.seconds, 3) if review else None,
            "judge": round(result.judge_seconds, 3),
        },
        "review_exit_code": review.exit_code if review else None,
        "findings": result.findings,
        "golden": [g.comment for g in result.case.golden],
        "verdicts": [v.as_json() for v in result.verdicts],
        "peer": _peer_json(result),
    }


def _peer_json(result: CaseResult) -> dict[str, Any] | None:
    peer = result.peer
    if peer is None:
        return None
    return {
        "tool": "pr-agent",
        "exit_code": peer.exit_code,
        "seconds": {"review": round(peer.seconds, 3)},
        "scores": result.peer_counts.as_json() if result.peer_counts else None,
        "candidates": peer.candidates,
        "verdicts": [v.as_json() for v in result.peer_verdicts],
        "error": None if peer.exit_code == 0 else f"pr-agent exited {peer.exit_code}",
    }


def run_json(results: list[CaseResult], prices: Prices, meta: dict[str, Any]) -> dict[str, Any]:
    cases = [case_json(r, prices) for r in results]
    scored = [r.counts for r in results if r.counts is not None]
    total = sum(scored, Counts(0, 0, 0, 0))
    tokens = {k: sum(c["tokens"][k] for c in cases) for k in cases[0]["tokens"]} if cases else {}
    costs = [c["cost_usd"] for c in cases if c["error"] is None]
    peers = [r.peer_counts for r in results if r.peer_counts is not None]
    peer_total = sum(peers, Counts(0, 0, 0, 0)).as_json() if peers else None
    return meta | {
        "cases": cases,
        "peer_total": peer_total,
        "total": total.as_json()
        | {
            "cases": len(results),
            "scored": len(scored),
            "errors": len(results) - len(scored),
            "judge_errors": sum(c["judge_errors"] for c in cases),
            "tokens": tokens,
            "cost_usd": None if not costs or None in costs else sum(costs),
            "seconds": {
                "review": round(sum(c["seconds"]["review"] or 0 for c in cases), 3),
                "judge": round(sum(c["seconds"]["judge"] for c in cases), 3),
            },
        },
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _money(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def markdown(data: dict[str, Any]) -> str:
    """The run as a Markdown table: one row per case, then the total."""
    lines = [
        f"# Quality run `{data['label']}`",
        "",
        f"Cases: `{data['cases_file']}` ({data['source'].get('benchmark', 'local')}). "
        f"Review model: {data['review_model']}. Judge: {data['judge_model']} "
        f"(prompts {data['judge_prompts']}). Mode: {data['mode']}.",
        "",
        "| case | golden | caught | findings | matched | precision | recall | F1 "
        "| tokens | cost | review s | judge s | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in data["cases"]:
        lines.append(_row(case["id"], case))
    lines.append(_row("**total**", data["total"] | {"error": None}))
    if data.get("peer_total"):
        lines += ["", "Side by side: pr-agent on the same cases, the same judge.", ""]
        lines += lines[4:6]
        for case in data["cases"]:
            if case.get("peer"):
                lines.append(_row(case["id"], case["peer"]))
        lines.append(_row("**total**", {"scores": data["peer_total"]}))
    return "\n".join(lines) + "\n"


def _row(name: str, item: dict[str, Any]) -> str:
    scores = item.get("scores") if "scores" in item else item
    tokens = sum(item["tokens"].values()) if item.get("tokens") else "–"
    seconds = item.get("seconds") or {}
    note = (item.get("error") or "").replace("|", "\\|")
    if item.get("judge_errors"):
        note = f"{item['judge_errors']} judge error(s), counted as no match. {note}".strip()
    if not scores:
        return f"| {name} | – | – | – | – | – | – | – | {tokens} | – | – | – | {note} |"
    return (
        f"| {name} | {scores['golden']} | {scores['caught']} | {scores['findings']} "
        f"| {scores['matched_findings']} | {_pct(scores['precision'])} | {_pct(scores['recall'])} "
        f"| {_pct(scores['f1'])} | {tokens} | {_money(item.get('cost_usd'))} "
        f"| {seconds.get('review') if seconds.get('review') is not None else '–'} "
        f"| {seconds.get('judge', '–')} | {note} |"
    )


def ablation_markdown(runs: dict[str, dict[str, Any]]) -> str:
    """Runs of the same cases with `review.context` on and off, in one table: per case, one
    row per mode, then each mode's total."""
    first = next(iter(runs.values()))
    lines = [
        f"# Quality run `{first['label']}`: context {' vs '.join(runs)}",
        "",
        f"Cases: `{first['cases_file']}` ({first['source'].get('benchmark', 'local')}). "
        f"Review model: {first['review_model']}. Judge: {first['judge_model']} "
        f"(prompts {first['judge_prompts']}). Mode: {first['mode']}. Context: the context pack "
        "and the symbol tools (`review.context`).",
        "",
        "| case | context | golden | caught | findings | matched | precision | recall | F1 "
        "| tokens | cost | review s | judge s | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_mode = {mode: {case["id"]: case for case in data["cases"]} for mode, data in runs.items()}
    for case in first["cases"]:
        for mode, cases in by_mode.items():
            if case["id"] in cases:
                lines.append(_with_mode(_row(case["id"], cases[case["id"]]), mode))
    for mode, data in runs.items():
        lines.append(_with_mode(_row("**total**", data["total"] | {"error": None}), mode))
    return "\n".join(lines) + "\n"


def _with_mode(row: str, mode: str) -> str:
    """`row` with the mode in its second column."""
    name, rest = row[2:].split(" | ", 1)
    return f"| {name} | {mode} | {rest}"
