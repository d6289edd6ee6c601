"""Prices: config first, then the bundled table by exact name (dated variants allowed)."""

from __future__ import annotations

import pytest

from reviewflow.config import Config, ModelPrice, ModelSettings
from reviewflow.cost.prices import bundled_price, bundled_table, price_of
from tests.wire_server import TEST_KEY, Text, WireServer


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),  # not gpt-4o's price
        ("GPT-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("anthropic/claude-sonnet-4", "claude-sonnet-4"),  # an OpenRouter name
        ("o3-mini", "o3-mini"),
    ],
)
def test_bundled_prices_by_name(name: str, key: str) -> None:
    info = bundled_price(name)
    assert info is not None and info.source == "bundled"
    assert info.price == ModelPrice.model_validate(bundled_table()["models"][key])
    assert info.as_of == bundled_table()["as_of"] and info.currency == "USD"


@pytest.mark.parametrize("name", ["llama3.1:8b", "claude-opus-4-5", "gpt-4o-turbo", "gpt-5o"])
def test_an_unknown_model_has_no_price_rather_than_a_neighbours(name: str) -> None:
    assert bundled_price(name) is None


def test_config_price_wins_and_cached_tokens_cost_the_cached_rate() -> None:
    price = ModelPrice(input=3.0, cached_input=0.3, output=15.0)
    info = price_of(ModelSettings(name="gpt-4o", price=price))
    assert info is not None and info.source == "config" and info.price == price
    assert price.cost(1_000_000, 0) == pytest.approx(3.0)
    assert price.cost(1_000_000, 100_000, cached=500_000) == pytest.approx(1.5 + 0.15 + 1.5)
    no_cache_rate = ModelPrice(input=1.0, output=2.0)
    assert no_cache_rate.cost(1_000_000, 0, cached=1_000_000) == pytest.approx(1.0)


def test_model_price_and_budget_in_config() -> None:
    config = Config.model_validate(
        {
            "model": {"price": {"input": 1, "output": 4}},
            "review": {"max_tokens": "1.5M", "max_cost": 2.5},
        }
    )
    assert config.model.price == ModelPrice(input=1.0, output=4.0)
    assert (config.review.max_tokens, config.review.max_cost) == (1_500_000, 2.5)
    assert "max_tokens" not in config.review.cache_identity()  # a budget never changes answers
    for bad in ({"max_tokens": "lots"}, {"max_tokens": 10}, {"max_cost": 0}):
        with pytest.raises(ValueError):
            Config.model_validate({"review": bad})


def test_model_price_names_its_currency_as_an_iso_code() -> None:
    assert ModelPrice(input=1, output=2).currency == "USD"  # the bundled table's
    price = ModelPrice.model_validate({"input": 1, "output": 2, "currency": "eur"})
    assert price.currency == "EUR"
    info = price_of(ModelSettings(name="local-model", price=price))
    assert info is not None and info.currency == "EUR"
    for bad in ("euro", "E1R", "", 7):
        with pytest.raises(ValueError, match="3-letter ISO code"):
            ModelPrice.model_validate({"input": 1, "output": 2, "currency": bad})


def test_the_estimate_and_the_budget_name_the_prices_currency() -> None:
    from reviewflow.cost.text import estimate_line

    price = {"input": 1, "output": 2, "source": "config", "as_of": None, "currency": "EUR"}
    record = {"requests": 3, "prompt_tokens": 9000, "completion_tokens": 800, "cost": 0.5}
    record |= {"model": "m", "price": price, "by_stage": {}, "files": []}
    record["findings"] = {"expected": 0.5, "low": 0, "high": 2.0}
    low = {"requests": 2, "prompt_tokens": 6000, "completion_tokens": 500, "cost": 0.25}
    record["range"] = {"low": low, "high": {**low, "requests": 9, "cost": 1.5}}
    record["budget"] = {"max_tokens": None, "max_cost": 2.5, "fits": True, "fits_high": True}
    line = estimate_line(record)
    assert "~0.50 EUR (model.price); with 0–2 findings: 2–9 requests, 0.25 EUR–1.50 EUR" in line
    assert line.endswith("; fits the budget of 2.50 EUR")
    price["currency"] = "USD"
    assert "~$0.50 (model.price); with 0–2 findings: 2–9 requests, $0.25–$1.50" in estimate_line(
        record
    )
    record["budget"]["fits_high"] = False
    assert estimate_line(record).endswith(
        "fits the budget of $2.50 unless it finds more than expected"
    )


def test_the_price_in_force_line() -> None:
    from reviewflow.cost.text import price_line

    as_of = bundled_table()["as_of"]
    line = price_line(ModelSettings(name="gpt-4o-2024-08-06"))
    assert line.startswith(f"price: bundled table entry for 'gpt-4o-2024-08-06' of {as_of} (")
    assert "USD per million tokens" in line and "model.price overrides it" in line
    own = ModelSettings(name="gpt-4o", price=ModelPrice(input=1, output=2, currency="EUR"))
    assert price_line(own) == "price: model.price (input 1, output 2 EUR per million tokens)"
    assert price_line(ModelSettings(name="llama3.1:8b")).startswith("price: none for model")


def test_every_model_a_review_asks_has_its_price_line_by_the_setting_that_prices_it() -> None:
    from reviewflow.cost.text import price_lines

    as_of = bundled_table()["as_of"]
    euro = {"input": 1, "output": 2, "currency": "EUR"}
    config = Config.model_validate(
        {
            "model": {"name": "gpt-4o-mini"},
            "review": {
                "passes": 3,
                "pass_models": [
                    {"name": "gpt-4o-mini"},  # model.*'s, at its price: no line of its own
                    {"name": "gpt-4o", "price": euro},
                    {"name": "llama3.1:8b"},
                ],
                "verify_model": "gpt-4o-2024-08-06",
            },
        }
    )
    main, second, third, verify = price_lines(config)
    assert main.startswith("price: bundled table entry for 'gpt-4o-mini'")
    assert (
        second
        == "pass 2: price: review.pass_models[1].price (input 1, output 2 EUR per million tokens)"
    )
    assert third.startswith("pass 3: price: none for model 'llama3.1:8b'")
    assert third.endswith("--max-cost is refused; set review.pass_models[2].price")
    assert verify.startswith(
        f"verification: price: bundled table entry for 'gpt-4o-2024-08-06' of {as_of}"
    )
    assert verify.endswith("review.verify_price overrides it")
    one_pass = config.model_copy(update={"review": config.review.model_copy(update={"passes": 1})})
    assert len(price_lines(one_pass)) == 2  # the other passes' models are not asked


def test_config_test_shows_the_price_in_force(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main

    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "openai")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    wire.script("openai", [Text("OK")])
    assert main(["config", "test"]) == 0
    out = capsys.readouterr().out
    as_of = bundled_table()["as_of"]
    assert f"  price: bundled table entry for 'gpt-4o-mini' of {as_of} (input 0.15" in out


def test_the_bundled_table_says_its_date_and_what_overrides_it() -> None:
    table = bundled_table()
    assert table["as_of"] and table["currency"] == "USD"
    assert table["overridden_by"].startswith("model.price")
