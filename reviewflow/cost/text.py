"""An estimate in words and as JSON: the one line a review starts with, the preview's table,
and the `estimate` object of the preview and of the JSON report."""

from __future__ import annotations

from typing import Any

from reviewflow.config import PLACEHOLDER_MODEL, Config, ModelSettings, ReviewSettings
from reviewflow.cost.estimate import Estimate, Figures, FileEstimate
from reviewflow.cost.prices import PriceInfo
from reviewflow.providers.budget import BudgetState, money, priced, short_count


def figures_record(figures: Figures, cost: float | None) -> dict[str, Any]:
    return {
        "requests": round(figures.requests, 1),
        "prompt_tokens": figures.prompt_tokens,
        "completion_tokens": figures.completion_tokens,
        "cost": None if cost is None else round(cost, 6),
    }


def estimate_record(
    estimate: Estimate, model: ModelSettings, settings: ReviewSettings
) -> dict[str, Any]:
    """The `estimate` object: totals, by stage, per file, the price and the budget's verdict."""
    record: dict[str, Any] = {
        **figures_record(estimate.total, estimate.cost),
        "model": model.name,
        "price": price_record(estimate.price),
        "by_stage": {
            stage: figures_record(figures, estimate.stage_cost(stage, figures))
            for stage, figures in estimate.by_stage.items()
        },
        "by_model": models_record(estimate),
        "files": [_file_record(item, estimate) for item in estimate.files],
        "context_tokens": sum(item.context_tokens for item in estimate.files),
        "findings": {
            "expected": round(estimate.findings, 1),
            "low": 0,
            "high": round(estimate.findings_high, 1),
        },
        "range": {
            "low": figures_record(_sum(estimate.low), estimate.cost_of(estimate.low)),
            "high": figures_record(_sum(estimate.high), estimate.cost_of(estimate.high)),
        },
    }
    budget = budget_verdict(estimate, settings)
    if budget is not None:
        record["budget"] = budget
    return record


def price_record(price: PriceInfo | None) -> dict[str, Any] | None:
    """A price in the estimate: its rates, where it comes from, its date and currency."""
    if price is None:
        return None
    return {
        **price.price.model_dump(mode="json"),
        "source": price.source,
        "as_of": price.as_of,
        "currency": price.currency,
    }


def models_record(estimate: Estimate) -> list[dict[str, Any]]:
    """Each model the review asks and what it is expected to cost at its own price: its passes'
    share of the chain stages, verification for the verify model, localization for model.*."""
    stages, prices = estimate.by_stage, estimate.prices
    chain = _sum({s: f for s, f in stages.items() if s not in ("verify", "localize")})
    rows = []
    for name, (model, passes) in prices.models().items():
        figures = chain.scaled(len(passes) / max(1, len(prices.passes)))
        if name == prices.verify.model and "verify" in stages:
            figures += stages["verify"]
        if name == prices.main.model and "localize" in stages:
            figures += stages["localize"]
        if figures.requests <= 0:
            continue
        info = model.price
        cost = (
            None
            if info is None
            else info.price.cost(figures.prompt_tokens, figures.completion_tokens)
        )
        rows.append(
            {
                "model": name,
                "passes": list(passes),
                **figures_record(figures, cost),
                "price": price_record(info),
            }
        )
    return rows


def _sum(stages: dict[str, Figures]) -> Figures:
    return sum(stages.values(), Figures())


def _file_record(item: FileEstimate, estimate: Estimate) -> dict[str, Any]:
    return {
        "path": item.path,
        "chunks": item.chunks,
        "context_tokens": item.context_tokens,
        **figures_record(item.total, estimate.cost_of(item.stages)),
        "by_stage": {
            stage: figures_record(figures, estimate.stage_cost(stage, figures))
            for stage, figures in item.stages.items()
        },
    }


def budget_verdict(estimate: Estimate, settings: ReviewSettings) -> dict[str, Any] | None:
    """Whether the estimate fits the review's budget (None without one)."""
    if settings.max_tokens is None and settings.max_cost is None:
        return None

    def fits(stages: dict[str, Figures]) -> bool:
        tokens = settings.max_tokens is None or _sum(stages).total_tokens <= settings.max_tokens
        cost = estimate.cost_of(stages)
        money = settings.max_cost is None or (cost is not None and cost <= settings.max_cost)
        return tokens and money

    return {
        "max_tokens": settings.max_tokens,
        "max_cost": settings.max_cost,
        "fits": fits(estimate.by_stage),
        "fits_high": fits(estimate.high),
    }


def _prices(record: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """Each model's price in an `estimate` object (model.* alone in a record without
    `by_model`, or when no model is expected to do anything)."""
    rows = [(row["model"], row["price"]) for row in record.get("by_model") or ()]
    return rows or [(record["model"], record["price"])]


def _currency(record: dict[str, Any]) -> str:
    known = [price["currency"] for _, price in _prices(record) if price is not None]
    return str(known[0]) if known else "USD"


def _amount(record: dict[str, Any], value: float) -> str:
    """`$0.42` in USD, `0.42 EUR` in another currency, the price's."""
    currency = _currency(record)
    return f"${money(value)}" if currency == "USD" else f"{money(value)} {currency}"


def _limit(record: dict[str, Any], verdict: dict[str, Any]) -> str:
    """The budget in words, `--max-cost` in the price's currency (`200k tokens and $2.50`)."""
    parts = []
    if verdict["max_tokens"] is not None:
        parts.append(BudgetState(max_tokens=verdict["max_tokens"]).describe())
    if verdict["max_cost"] is not None:
        parts.append(priced(verdict["max_cost"], _currency(record)))  # as typed: $0.001
    return " and ".join(parts)


def no_price(model: str) -> str:
    """Why a review has no price, and what to set: no model named yet (the placeholder), or a
    model the bundled table does not hold."""
    if model == PLACEHOLDER_MODEL:
        return "no model set: set model.name (or pass --model), e.g. gpt-4o"
    return f"no price for model '{model}': set model.price"


def unpriced(record: dict[str, Any]) -> str:
    """Why an `estimate` object has no cost: the first model without a price (what to set
    for it: model.price, its review.pass_models entry's price), or prices in two currencies."""
    for name, price in _prices(record):
        if price is None and name == record["model"]:
            return no_price(name)
        if price is None:
            passes = next(r["passes"] for r in record["by_model"] if r["model"] == name)
            where = "its review.pass_models entry's price" if passes else "review.verify_price"
            return f"no price for model '{name}': set {where}"
    currencies = sorted({price["currency"] for _, price in _prices(record) if price})
    return f"prices in {' and '.join(currencies)}: give every model's price in one currency"


def _sources(record: dict[str, Any]) -> str:
    """Where the prices come from: `model.price`, `bundled prices of 2025-08-01`, or both."""
    prices = [price for _, price in _prices(record) if price is not None]
    several = len(_prices(record)) > 1
    where = []
    if any(price["source"] == "config" for price in prices):
        where.append("configured prices" if several else "model.price")
    dates = sorted({price["as_of"] for price in prices if price["source"] == "bundled"})
    where += [f"bundled prices of {date}" for date in dates]
    return " and ".join(where)


def cost_text(record: dict[str, Any]) -> str:
    """`~$0.42 (bundled prices of 2025-08-01)`, `~0.42 (model.price)`, or why no amount."""
    if record["cost"] is None:
        return f"cost unknown ({unpriced(record)})"
    return f"~{_amount(record, record['cost'])} ({_sources(record)})"


RANGE_SHOWN = 1.25  # the line names the range when its high end is this much above the estimate
RANGE_SHOWN_REQUESTS = 2  # and at least this many requests above it


def range_text(record: dict[str, Any]) -> str | None:
    """`with 0–2 findings: 3–19 requests, $0.01–$0.04`: what the findings the review makes move
    (None when they move it little: the high end under RANGE_SHOWN times the estimate or under
    RANGE_SHOWN_REQUESTS more requests)."""
    low, high = record["range"]["low"], record["range"]["high"]
    above = high["requests"] - record["requests"]
    if high["requests"] < RANGE_SHOWN * record["requests"] or above < RANGE_SHOWN_REQUESTS:
        return None
    text = (
        f"with 0–{record['findings']['high']:.0f} findings: "
        f"{low['requests']:.0f}–{high['requests']:.0f} requests"
    )
    if low["cost"] is not None and high["cost"] is not None:
        text += f", {_amount(record, low['cost'])}–{_amount(record, high['cost'])}"
    return text


def estimate_line(record: dict[str, Any]) -> str:
    """An `estimate` object in one line, with its range when the findings drive it and the
    budget's verdict when there is one."""
    line = (
        f"estimate: ~{record['requests']:.0f} requests, "
        f"{short_count(record['prompt_tokens'])} prompt + "
        f"{short_count(record['completion_tokens'])} completion tokens, {cost_text(record)}"
    )
    spread = range_text(record)
    if spread is not None:
        line += f"; {spread}"
    verdict = record.get("budget")
    if verdict is None:
        return line
    limit = _limit(record, verdict)
    if verdict["fits"] and verdict["fits_high"]:
        return f"{line}; fits the budget of {limit}"
    if verdict["fits"]:
        return f"{line}; fits the budget of {limit} unless it finds more than expected"
    return f"{line}; does NOT fit the budget of {limit}: the review will stop when it is spent"


def estimate_table(record: dict[str, Any], paths: list[str]) -> list[str]:
    """The preview's lines: one per file (`paths`: escaped and padded), then the total."""

    context = any(item.get("context_tokens") for item in record["files"])

    def row(item: dict[str, Any]) -> str:
        cost = "n/a" if item["cost"] is None else _amount(record, item["cost"])
        tokens = item.get("context_tokens")
        pack = f"{'' if tokens is None else short_count(tokens):>8}  " if context else ""
        return (
            f"{item['requests']:>9.1f}  {short_count(item['prompt_tokens']):>8}  "
            f"{pack}{short_count(item['completion_tokens']):>10}  {cost:>9}"
        )

    width = max([len("(localize)"), *(len(p) for p in paths)])
    pack_head = f"{'context':>8}  " if context else ""
    head = f"{'requests':>9}  {'prompt':>8}  {pack_head}{'completion':>10}  {'cost':>9}"
    lines = [f"  {'file'.ljust(width)}  {head}"]
    lines += [f"  {p.ljust(width)}  {row(f)}" for p, f in zip(paths, record["files"], strict=True)]
    if "localize" in record["by_stage"]:  # once per review, not per file
        lines.append(f"  {'(localize)'.ljust(width)}  {row(record['by_stage']['localize'])}")
    lines.append(f"  {'total'.ljust(width)}  {row(record)}")
    stages = ", ".join(
        f"{stage} {figures['requests']:.1f}" for stage, figures in record["by_stage"].items()
    )
    lines.append(f"  requests by stage: {stages}")
    spread = range_text(record)
    if spread is not None:
        lines.append(f"  {spread} ({record['findings']['expected']:g} expected)")
    lines.append(f"  {_prices_note(record)}")
    return lines


def _prices_note(record: dict[str, Any]) -> str:
    """Where the table's prices come from: the bundled table's date, model.price, or none;
    with several models, each model's price."""
    if len(_prices(record)) > 1:
        return f"prices per model: {models_note(record)}"
    price = record["price"]
    if price is None:
        return f"prices: none ({no_price(record['model'])})"
    if price["source"] == "config":
        return f"prices: model.price ({price['currency']} per million tokens)"
    return (
        f"prices: the bundled table of {price['as_of']} ({price['currency']} per million "
        "tokens); model.price overrides it"
    )


def models_note(record: dict[str, Any]) -> str:
    """`gpt-4o (passes 1, 3) 2.5/10 USD (bundled, 2025-08-01); o3-mini (pass 2) no price per
    million tokens`: each model, the passes it runs (or verification and localization) and its
    input/output price."""
    parts = []
    for row in record["by_model"]:
        passes = row["passes"]
        runs = f"pass{'es' if len(passes) > 1 else ''} {', '.join(map(str, passes))}"
        price = row["price"]
        if price is None:
            rates = "no price"
        else:
            rates = f"{price['input']:g}/{price['output']:g} {price['currency']}"
            source = "configured" if price["source"] == "config" else f"bundled, {price['as_of']}"
            rates += f" ({source})"
        parts.append(f"{row['model']} ({runs if passes else 'verification'}) {rates}")
    return "; ".join(parts) + " (input/output per million tokens)"


def price_line(model: ModelSettings, setting: str = "model.price") -> str:
    """Which price a review of `model` uses: `config test`'s line (bundled entry with its date,
    the price `setting` gives, or none)."""
    from reviewflow.cost.prices import price_of

    info = price_of(model)
    if info is None:
        if model.name == PLACEHOLDER_MODEL:
            return f"price: none ({no_price(model.name)})"
        return (
            f"price: none for model '{model.name}' (not in the bundled table): estimates name "
            f"no cost and --max-cost is refused; set {setting}"
        )
    price = info.price
    rates = f"input {price.input:g}, output {price.output:g}"
    if price.cached_input is not None:
        rates += f", cached input {price.cached_input:g}"
    rates += f" {info.currency} per million tokens"
    if info.source == "config":
        return f"price: {setting} ({rates})"
    return (
        f"price: bundled table entry for '{model.name}' of {info.as_of} ({rates}); "
        f"{setting} overrides it"
    )


def price_lines(config: Config) -> list[str]:
    """`config test`'s price lines: `model.*`'s, then each other model a review of `config`
    asks, by the setting that prices it: a pass's `review.pass_models` entry (one naming
    `model.name` without a price of its own is `model.*`'s), and `review.verify_model`."""
    main, review = config.model, config.review
    lines = [price_line(main)]
    for n, model in enumerate(review.pass_models[: review.passes]):
        if model.name != main.name or model.price is not None:
            setting = f"review.pass_models[{n}].price"
            lines.append(f"pass {n + 1}: {price_line(model, setting)}")
    if review.verify_model not in (None, main.name):
        verifier = ModelSettings(name=review.verify_model, price=review.verify_price)
        lines.append(f"verification: {price_line(verifier, 'review.verify_price')}")
    return lines
