"""Azure OpenAI without a key or a ready-made token: azure-identity's DefaultAzureCredential
(the `azure` extra) signs in, here through the real Azure CLI credential and a fake `az`,
against the wire server; its absence and a chain that finds nothing are one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.config import Config, ModelSettings
from reviewflow.providers.doctor import Outcome, check_model
from tests.platforms import AZURE_CLI_TOKEN, azure_cli
from tests.wire_server import HttpError, Text, WireServer


def _azure(wire: WireServer) -> ModelSettings:
    return wire.platform_settings("azure", "openai", name="gpt-4o")


def test_azure_entra_id_token_from_the_default_chain(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = azure_cli(monkeypatch, tmp_path, logged_in=True)
    wire.script("openai", [HttpError(401), Text("OK")])
    refused = check_model(Config(model=_azure(wire)))
    assert refused.outcome is Outcome.KEY_REJECTED and "az login" in str(refused.hint)
    assert AZURE_CLI_TOKEN not in refused.render()
    assert check_model(Config(model=_azure(wire))).ok
    records = wire.requests("openai")
    assert len(records) == 2
    for record in records:
        assert record.headers["authorization"] == f"Bearer {AZURE_CLI_TOKEN}"
        assert "api-key" not in record.headers
    assert "--resource https://cognitiveservices.azure.com" in calls.read_text()


def test_azure_default_chain_finding_nothing_names_the_ways_to_sign_in(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    azure_cli(monkeypatch, tmp_path, logged_in=False)
    report = check_model(Config(model=_azure(wire)))
    assert report.outcome is Outcome.MISSING_CREDENTIALS
    for way in ("az login", "managed identity", "AZURE_CLIENT_SECRET", "AZURE_OPENAI_API_KEY"):
        assert way in report.message
    assert "\n" not in report.message and "DefaultAzureCredential" not in report.message
    assert wire.requests() == []


def test_azure_without_azure_identity_installed_says_how_to_get_it(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    azure_cli(monkeypatch, tmp_path, logged_in=True)
    real = importlib.util.find_spec
    monkeypatch.setattr(  # as where the azure extra was not installed
        "reviewflow.providers.factory.find_spec",
        lambda name: None if name == "azure.identity" else real(name),
    )
    report = check_model(Config(model=_azure(wire)))
    assert report.outcome is Outcome.CONFIG
    assert "pip install 'reviewflow[azure]'" in report.message and "\n" not in report.message
    assert wire.requests() == []


@pytest.mark.parametrize("logged_in", [True, False])
def test_config_test_signs_in_with_the_default_chain(
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    logged_in: bool,
) -> None:
    from flows.cli.main import main

    azure_cli(monkeypatch, tmp_path, logged_in=logged_in)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("REVIEWFLOW_MODEL_API_KEY", raising=False)
    for name, value in (("PLATFORM", "azure"), ("NAME", "gpt-4o"), ("ENDPOINT", wire.url)):
        monkeypatch.setenv(f"REVIEWFLOW_MODEL_{name}", value)
    wire.script("openai", [Text("OK")])
    code = main(["config", "test"])
    out, err = capsys.readouterr()
    assert AZURE_CLI_TOKEN not in out + err
    if logged_in:
        assert code == 0 and f"on azure at {wire.url}: OK" in out
        (record,) = wire.requests("openai")
        assert record.headers["authorization"] == f"Bearer {AZURE_CLI_TOKEN}"
    else:
        assert code == 2 and "az login" in out + err and wire.requests() == []
