"""create_provider's early failures and `check_model` (the `config test` command)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from reviewflow.config import PLACEHOLDER_MODEL, Config, ModelSettings
from reviewflow.errors import ConfigError
from reviewflow.providers import create_provider
from reviewflow.providers.doctor import Outcome, check_model
from reviewflow.providers.factory import MissingKeyError, PlaceholderModelError
from tests.wire_server import TEST_KEY, Delay, HttpError, Text, WireServer, WireUsage


def test_placeholder_model_fails_at_once_naming_the_setting() -> None:
    with pytest.raises(PlaceholderModelError) as caught:
        create_provider(ModelSettings.model_validate({"api_key": "k" * 8}))
    assert isinstance(caught.value, ConfigError)
    assert "reviewflow config set model.name" in str(caught.value)
    assert "REVIEWFLOW_MODEL_NAME" in str(caught.value)


@pytest.mark.parametrize(
    ("protocol", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ],
)
def test_missing_key_names_both_variables(protocol: str, variable: str) -> None:
    with pytest.raises(MissingKeyError) as caught:
        create_provider(ModelSettings.model_validate({"protocol": protocol, "name": "m"}))
    assert "REVIEWFLOW_MODEL_API_KEY" in str(caught.value) and variable in str(caught.value)


def test_local_openai_endpoint_needs_no_key(wire: WireServer) -> None:
    wire.script("openai", [Text("hi")])
    assert check_model(Config(model=wire.settings("openai", key=None))).ok
    assert wire.requests("openai")[0].credential == "no-key"


def _config(wire: WireServer, protocol: str, **kwargs: object) -> Config:
    return Config(model=wire.settings(protocol, **kwargs))  # type: ignore[arg-type]


def test_doctor_ok(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Text("OK", usage=WireUsage(prompt=9, completion=1))])
    report = check_model(_config(wire, protocol))
    assert report.ok and report.exit_code == 0
    assert "OK" in report.render() and "9 prompt + 1 completion" in report.render()
    assert len(wire.requests(protocol)) == 1


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (HttpError(401), Outcome.KEY_REJECTED),
        (HttpError(404), Outcome.UNKNOWN_MODEL),
        (HttpError(429), Outcome.TRANSIENT),
        (HttpError(400), Outcome.REJECTED),
        (Delay(5), Outcome.TIMEOUT),
    ],
)
def test_doctor_explains_failures(
    wire: WireServer, protocol: str, reply: object, outcome: Outcome
) -> None:
    wire.script(protocol, [reply])  # type: ignore[list-item]
    # Short only where the timeout is the point: a busy CPU can take 0.3 s to answer at all.
    timeout = 0.3 if outcome is Outcome.TIMEOUT else 30.0
    report = check_model(_config(wire, protocol, timeout=timeout))
    assert report.outcome is outcome and report.exit_code == 2
    assert report.hint
    assert TEST_KEY not in report.render() and TEST_KEY not in report.model_dump_json()
    assert len(wire.requests(protocol)) == 1  # one tiny request, no retry


def test_doctor_unreachable_endpoint() -> None:
    with WireServer() as gone:
        config = Config(model=gone.settings("anthropic"))
    report = check_model(config)
    assert report.outcome is Outcome.UNREACHABLE
    assert "model.endpoint" in report.render()


def test_doctor_placeholder_and_missing_key() -> None:
    placeholder = check_model(Config())
    assert placeholder.outcome is Outcome.PLACEHOLDER_MODEL
    assert PLACEHOLDER_MODEL in placeholder.message
    missing = check_model(Config(model=ModelSettings(protocol="gemini", name="g")))
    assert missing.outcome is Outcome.MISSING_KEY
    assert "GEMINI_API_KEY" in missing.render()


def test_doctor_unusable_endpoint_is_a_config_problem(protocol: str) -> None:
    settings = ModelSettings.model_construct(  # what the config now refuses, built anyway
        protocol=protocol,
        name="m",
        endpoint="http://[::1/v1",
        timeout=1.0,
        api_key=SecretStr(TEST_KEY),
    )
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.CONFIG and report.exit_code == 2
    assert "check model.endpoint" in report.render() and TEST_KEY not in report.render()
