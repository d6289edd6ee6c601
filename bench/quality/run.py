"""Quality harness: review public benchmark cases with reviewflow and score the findings.

    python bench/quality/run.py --cases martian --model gpt-4.1 [--protocol openai]
    python bench/quality/run.py --cases martian --dry-run
    python bench/quality/run.py --cases martian --model gpt-4.1 --replay   # no request at all
    python bench/quality/run.py --cases martian --model gpt-4.1 --context on --context off
    python bench/quality/run.py --cases martian --model gpt-4.1 --passes 3 --min-agreement 2

The model comes from reviewflow's config like a review's (config.yaml < REVIEWFLOW_MODEL_* <
these flags); the judge is the same model unless --judge-* say otherwise. See
bench/quality/README.md for the method, the outputs and what they cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality.cases import CaseList, QualityError, load_cases
from bench.quality.fetch import plan
from bench.quality.harness import Mode, Settings, run_case
from bench.quality.judge import prompts_digest
from bench.quality.peer import peer_missing
from bench.quality.results import Prices, ablation_markdown, markdown, run_json
from bench.quality.review import ModelChoice
from reviewflow.config import load_config, protocol_names
from reviewflow.errors import ReviewError
from reviewflow.fsutil import write_output
from reviewflow.home import home_dir
from reviewflow.providers.factory import check_settings

HERE = Path(__file__).resolve().parent
PEERS = ("pr-agent",)
CONTEXT_MODES = ("on", "off")
MAX_PASSES = 5  # review.passes


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/quality/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", required=True, help="martian, swr, or a case list JSON path")
    p.add_argument("--case", action="append", metavar="ID", help="only this case (repeatable)")
    p.add_argument("--limit", type=int, help="only the first N cases")
    p.add_argument("--protocol", choices=protocol_names(), help="review model protocol")
    p.add_argument("--model", help="review model name (default: reviewflow's config)")
    p.add_argument("--endpoint", help="review model endpoint (default: reviewflow's config)")
    p.add_argument("--judge-protocol", choices=protocol_names())
    p.add_argument("--judge-model", help="judge model name (default: the review model)")
    p.add_argument("--judge-endpoint")
    p.add_argument("--label", help="names the run's cassettes and results (default: the model)")
    p.add_argument("--cache-dir", type=Path, help="fetched repositories (~/.cache/...)")
    p.add_argument(
        "--cassettes", type=Path, help="cassette folder (default bench/quality/cassettes/LABEL)"
    )
    p.add_argument("--out", type=Path, help="results folder (default bench/quality/results/LABEL)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--replay", action="store_true", help="score from the cassettes, no request")
    mode.add_argument("--rejudge", action="store_true", help="stored reviews, a new judge")
    mode.add_argument("--dry-run", action="store_true", help="list the cases and what to fetch")
    p.add_argument("--peer", choices=PEERS, help="also run this tool when installed")
    p.add_argument("--judge-workers", type=int, default=8, help="judge requests in flight")
    p.add_argument(
        "--judge-temperature",
        default="0",
        metavar="T",
        help="judge temperature (default 0; `default` for models that refuse any other)",
    )
    p.add_argument("--review-args", default="", help="extra `reviewflow review` flags, quoted")
    p.add_argument(
        "--context",
        action="append",
        choices=CONTEXT_MODES,
        help="review with the context pack and symbol tools on or off (repeat for both: one "
        "table side by side); each has its own cassettes and results",
    )
    p.add_argument(
        "--passes",
        type=int,
        metavar="N",
        help="review with N independent passes (review.passes, 1-5); cassettes and results in "
        "a passes-N-kK folder",
    )
    p.add_argument(
        "--min-agreement",
        type=int,
        metavar="K",
        help="keep the findings K passes found (review.min_agreement; default a majority)",
    )
    p.add_argument("--price", metavar="IN,OUT", help="review model USD per million tokens")
    p.add_argument("--judge-price", metavar="IN,OUT", help="judge USD per million tokens")
    return p


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    args = parser().parse_args(argv)
    env = dict(os.environ if env is None else env)
    try:
        cases = load_cases(args.cases, args.case)
        if args.limit is not None:
            cases = CaseList(cases.name, cases.source, cases.cases[: args.limit], cases.path)
        cache = (
            args.cache_dir
            or Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "reviewflow-quality"
        )
        if args.dry_run:
            return dry_run(cases, cache)
        settings = _agreement(_settings(args, env, cache), args.passes, args.min_agreement)
        prices = Prices(
            *_prices(args.price, "--price"), *_prices(args.judge_price, "--judge-price")
        )
    except (QualityError, ReviewError) as exc:
        print(f"quality: {exc}", file=sys.stderr)
        return 2
    if args.peer:
        missing = peer_missing(settings.review.protocol)
        if missing and settings.mode != "replay":
            print(f"quality: {missing}; reviewflow runs alone", file=sys.stderr)
        else:
            settings = replace(settings, peer=True)
    return _run(cases, settings, prices, args)


def dry_run(cases: CaseList, cache: Path) -> int:
    """The cases and what fetching each would do; nothing fetched, no model asked."""
    source = cases.source.get("benchmark", "local case list")
    golden = sum(len(c.golden) for c in cases.cases)
    print(f"{cases.path}: {len(cases.cases)} cases, {golden} golden comments ({source})")
    for case in cases.cases:
        print(f"{case.id}\t{len(case.golden)} golden\t{plan(case, cache)}")
    return 0


def _run(cases: CaseList, settings: Settings, prices: Prices, args: argparse.Namespace) -> int:
    """The run, or with `--context` one run per mode (its cassettes and results in a
    `context-on` / `context-off` folder), then both side by side in one table."""
    cassettes = settings.cassettes if settings.agreement is None else settings.cassettes.parent
    label = cassettes.name
    out = args.out or HERE / "results" / label
    if settings.agreement is not None:  # as the cassettes: a folder per passes and agreement
        out = out / settings.cassettes.name
    modes = list(dict.fromkeys(args.context or []))
    if not modes:
        data = _run_one(cases, settings, prices, out, label)
        return 0 if data["total"]["errors"] == 0 else 1
    runs: dict[str, dict[str, Any]] = {}
    for mode in modes:
        print(f"quality: review.context {mode}", file=sys.stderr)
        flags = [*settings.review_args, "--context", mode]
        cassettes = settings.cassettes / f"context-{mode}"
        one = replace(settings, review_args=flags, cassettes=cassettes)
        runs[mode] = _run_one(cases, one, prices, out / f"context-{mode}", label, context=mode)
    if len(runs) > 1:
        table = ablation_markdown(runs)
        write_output(out / "results.md", table, 0o644)
        print(table)
    return 0 if all(data["total"]["errors"] == 0 for data in runs.values()) else 1


def _run_one(
    cases: CaseList,
    settings: Settings,
    prices: Prices,
    out: Path,
    label: str,
    context: str | None = None,
) -> dict[str, Any]:
    """One run's results, written to `out` and printed."""
    results = []
    for n, case in enumerate(cases.cases, 1):
        result = run_case(case, settings)
        status = result.error or (
            f"{result.counts.caught}/{result.counts.golden} caught, "
            f"{result.counts.matched_findings}/{result.counts.findings} findings matched"
            if result.counts
            else "no score"
        )
        print(f"[{n}/{len(cases.cases)}] {case.id}: {status}", file=sys.stderr)
        results.append(result)
    meta: dict[str, Any] = {
        "label": label,
        "mode": settings.mode,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cases_file": str(cases.path),
        "source": cases.source,
        "review_model": f"{settings.review.protocol}:{settings.review.name}",
        "judge_model": f"{settings.judge.protocol}:{settings.judge.name}",
        "judge_prompts": prompts_digest(),
    }
    if context is not None:
        meta["context"] = context
    if settings.agreement is not None:
        meta["passes"], meta["min_agreement"] = settings.agreement
    data = run_json(results, prices, meta)
    write_output(out / "results.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n", 0o644)
    write_output(out / "results.md", markdown(data), 0o644)
    print(markdown(data))
    print(f"quality: results in {out}", file=sys.stderr)
    return data


def _settings(args: argparse.Namespace, env: dict[str, str], cache: Path) -> Settings:
    review_flags = _model_flags(args.protocol, args.model, args.endpoint)
    review = load_config(home_dir(env), env, {"model": review_flags}).model
    judge_flags = {
        "protocol": review.protocol,
        "name": review.name,
        "endpoint": review.endpoint,
    }
    judge_flags |= _model_flags(args.judge_protocol, args.judge_model, args.judge_endpoint)
    judge = load_config(
        home_dir(env), env, {"model": {k: v for k, v in judge_flags.items() if v}}
    ).model
    label = args.label or review.name.replace("/", "_")
    mode: Mode = "replay" if args.replay else "rejudge" if args.rejudge else "live"
    if mode == "live":
        check_settings(review)
    if mode != "replay":
        check_settings(judge)
    return Settings(
        review=ModelChoice(review.protocol, review.name, review.effective_endpoint),
        judge=ModelChoice(judge.protocol, judge.name, judge.effective_endpoint),
        review_key=review.api_key,
        judge_key=judge.api_key,
        cache=cache,
        cassettes=args.cassettes or HERE / "cassettes" / label,
        mode=mode,
        workers=args.judge_workers,
        judge_temperature=_temperature(args.judge_temperature),
        review_args=shlex.split(args.review_args),
        env=env,
    )


def _agreement(settings: Settings, passes: int | None, agreement: int | None) -> Settings:
    """`settings` reviewing with `passes` independent passes kept at `agreement` (the
    review's `--passes` and `--min-agreement`), the cassettes in a folder of their own
    (`passes-N-kK`); unchanged with neither."""
    if passes is None and agreement is None:
        return settings
    n = 1 if passes is None else passes
    if not 1 <= n <= MAX_PASSES:
        raise QualityError(f"--passes {n}: expected a number of passes from 1 to {MAX_PASSES}")
    k = n // 2 + 1 if agreement is None else agreement
    if not 1 <= k <= n:
        raise QualityError(f"--min-agreement {k}: expected a number from 1 to --passes {n}")
    flags = [*settings.review_args, "--passes", str(n), "--min-agreement", str(k)]
    folder = settings.cassettes / f"passes-{n}-k{k}"
    return replace(settings, review_args=flags, cassettes=folder, agreement=(n, k))


def _model_flags(protocol: str | None, name: str | None, endpoint: str | None) -> dict[str, str]:
    flags = {"protocol": protocol, "name": name, "endpoint": endpoint}
    return {k: v for k, v in flags.items() if v}


def _temperature(value: str) -> float | None:
    if value == "default":
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0.0 <= number <= 2.0:
        raise QualityError(
            f"--judge-temperature {value}: expected a number from 0 to 2, or `default`"
        )
    return number


def _prices(value: str | None, flag: str) -> tuple[float | None, float | None]:
    if value is None:
        return None, None
    try:
        first, second = (float(x) for x in value.split(","))
    except ValueError:
        raise QualityError(
            f"{flag} {value}: expected IN,OUT in USD per million tokens, e.g. 2.5,10"
        ) from None
    return first, second


if __name__ == "__main__":
    raise SystemExit(main())
