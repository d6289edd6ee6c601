"""One case from fetch to score, live or from its cassette.

Modes:
- `live`: fetch, review through the recording proxy, judge through it; the cassette is written.
- `replay`: nothing fetched, reviewed or sent: the stored report is scored again and the judge's
  requests are answered from the cassette (a request it does not hold is an error, never sent).
- `rejudge`: the stored report, a new judge (its answers recorded): for a new judge prompt or
  judge model, paying for the judge only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr

from bench.quality.cases import Case, QualityError
from bench.quality.cassette import Tape, proxy
from bench.quality.fetch import fetch
from bench.quality.judge import Ask, Verdict, extract_issues, judge_pairs, provider_ask
from bench.quality.peer import PeerRun, run_peer
from bench.quality.review import ModelChoice, ReviewRun, run_review
from bench.quality.score import Counts, count, finding_text, line_window_hits, pairs_for_judge
from reviewflow.config import ModelSettings
from reviewflow.fsutil import write_output
from reviewflow.providers.factory import create_provider

Mode = Literal["live", "replay", "rejudge"]


@dataclass(frozen=True)
class Settings:
    review: ModelChoice
    judge: ModelChoice
    review_key: SecretStr | None
    judge_key: SecretStr | None
    cache: Path
    cassettes: Path
    mode: Mode
    workers: int = 8
    judge_temperature: float | None = 0.0
    peer: bool = False
    review_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    agreement: tuple[int, int] | None = None  # --passes N --min-agreement K: (N, K)


@dataclass
class CaseResult:
    case: Case
    base: str | None = None
    head: str | None = None
    counts: Counts | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    review: ReviewRun | None = None
    judge_seconds: float = 0.0
    error: str | None = None
    misses: int = 0
    peer: PeerRun | None = None
    peer_counts: Counts | None = None
    peer_verdicts: list[Verdict] = field(default_factory=list)

    def tokens(self) -> dict[str, int]:
        usage = ((self.review.report or {}) if self.review else {}).get("usage") or {}
        return {
            "review_prompt": int(usage.get("prompt_tokens") or 0),
            "review_completion": int(usage.get("completion_tokens") or 0),
            "judge_prompt": sum(v.prompt_tokens for v in self.verdicts),
            "judge_completion": sum(v.completion_tokens for v in self.verdicts),
        }


def cassette_path(settings: Settings, case: Case) -> Path:
    return settings.cassettes / f"{case.id}.json"


def run_case(case: Case, settings: Settings) -> CaseResult:
    """The case's result; a failure of this case is its `error`, the run goes on."""
    result = CaseResult(case)
    try:
        if settings.mode == "live":
            _live(case, settings, result)
        else:
            _stored(case, settings, result)
    except QualityError as exc:
        result.error = str(exc)
    return result


def _live(case: Case, settings: Settings, result: CaseResult) -> None:
    fetched = fetch(case, settings.cache, settings.env)
    result.base, result.head = fetched.base, fetched.head
    tape = Tape()
    with proxy(settings.review.endpoint, tape) as review_proxy:
        result.review = run_review(
            fetched.repo,
            fetched.base,
            fetched.head,
            settings.review,
            review_proxy.url,
            settings.review_args,
        )
        if settings.peer:
            review_proxy.set_stage("peer")
            key = settings.review_key.get_secret_value() if settings.review_key else None
            result.peer = run_peer(
                fetched.repo,
                fetched.base,
                fetched.head,
                settings.review.name,
                review_proxy.url,
                key,
            )
    _check_review(result)
    _judge(case, settings, result, tape, live=True)
    _save(case, settings, result, tape)


def _stored(case: Case, settings: Settings, result: CaseResult) -> None:
    path = cassette_path(settings, case)
    if not path.exists():
        raise QualityError(f"no cassette at {path} (run it live first)")
    data = json.loads(path.read_text(encoding="utf-8"))
    result.base, result.head = data.get("base"), data.get("head")
    review = data["review"]
    result.review = ReviewRun(
        review["exit_code"], review["seconds"], review["report"], review.get("stderr_tail", "")
    )
    _check_review(result)
    if settings.peer and data.get("peer"):
        result.peer = PeerRun.from_json(data["peer"])
    tape = Tape.from_json(data.get("exchanges", []))
    if settings.mode == "rejudge":
        tape = Tape([e for e in tape.exchanges if e.stage != "judge"])
    _judge(case, settings, result, tape, live=settings.mode == "rejudge")
    if settings.mode == "rejudge":
        _save(case, settings, result, tape)


def _check_review(result: CaseResult) -> None:
    review = result.review
    assert review is not None
    if review.report is None or review.exit_code not in (0, 1):
        detail = review.stderr_tail.splitlines()[-1:] or ["no report"]
        raise QualityError(f"review exited {review.exit_code}: {detail[0]}")


def _judge(case: Case, settings: Settings, result: CaseResult, tape: Tape, live: bool) -> None:
    report = result.review.report if result.review else None
    items = [finding_text(f) for f in (report or {}).get("findings", [])]
    result.findings = [f.text for f in items]
    hits = line_window_hits(case.golden, items)
    pairs = pairs_for_judge(len(case.golden), len(items), hits)
    started = time.monotonic()
    with proxy(settings.judge.endpoint if live else None, tape) as judge_proxy:
        judge_proxy.set_stage("judge")
        provider = create_provider(_judge_settings(settings, judge_proxy.url))
        try:
            ask = provider_ask(provider, pause=2.0 if live else 0.0)
            golden = [g.comment for g in case.golden]
            verdicts = judge_pairs(
                ask, pairs, golden, result.findings, settings.workers, settings.judge_temperature
            )
            if result.peer is not None:
                _judge_peer(case, settings, result, ask, judge_proxy.set_stage)
        finally:
            provider.close()
    result.judge_seconds = time.monotonic() - started
    result.misses = len(tape.misses)
    result.verdicts = hits + verdicts
    if result.misses:
        raise QualityError(f"{result.misses} judge request(s) not in the cassette (use --rejudge)")
    result.counts = count(len(case.golden), len(items), result.verdicts)


def _judge_peer(
    case: Case, settings: Settings, result: CaseResult, ask: Ask, stage: Callable[[str], None]
) -> None:
    """The peer's review split into issues, then judged like reviewflow's findings."""
    peer = result.peer
    assert peer is not None
    stage("extract")
    peer.candidates, _ = extract_issues(ask, peer.review, settings.judge_temperature)
    stage("judge")
    golden = [g.comment for g in case.golden]
    pairs = [(g, f) for g in range(len(golden)) for f in range(len(peer.candidates))]
    result.peer_verdicts = judge_pairs(
        ask, pairs, golden, peer.candidates, settings.workers, settings.judge_temperature
    )
    result.peer_counts = count(len(golden), len(peer.candidates), result.peer_verdicts)


def _judge_settings(settings: Settings, url: str) -> ModelSettings:
    """The judge's client settings, pointed at the proxy (a replay sends no key anywhere: the
    SDKs that insist on one get a stand-in)."""
    key = settings.judge_key
    if key is None and settings.mode == "replay":
        key = SecretStr("replay-needs-no-key")
    return ModelSettings(
        protocol=settings.judge.protocol,
        name=settings.judge.name,
        endpoint=url,
        api_key=key,
        timeout=300.0,
    )


def _save(case: Case, settings: Settings, result: CaseResult, tape: Tape) -> None:
    review = result.review
    assert review is not None
    data: dict[str, Any] = {
        "case": case.id,
        "repo": case.repo,
        "base": result.base,
        "head": result.head,
        "review_model": {"protocol": settings.review.protocol, "name": settings.review.name},
        "judge_model": {"protocol": settings.judge.protocol, "name": settings.judge.name},
        "review": review.as_json(),
        "verdicts": [v.as_json() for v in result.verdicts],
        "peer": result.peer.as_json() if result.peer else None,
        "peer_verdicts": [v.as_json() for v in result.peer_verdicts],
        "exchanges": tape.as_json(),
    }
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    write_output(cassette_path(settings, case), text, 0o644)
