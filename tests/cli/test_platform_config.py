"""model.platform in the config and on the command line: the settings each platform reads from its
own variables, keys kept to their platform, one-line errors, and `config test` on each platform
against the wire server."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config import KEY_ENV_VARS, Config, get_value, load_config, set_value
from reviewflow.errors import ConfigError
from reviewflow.providers import ProviderPool
from reviewflow.providers.pool import ProviderHandle
from tests.platforms import AWS_SECRET_KEY, AWS_SESSION_TOKEN, aws_credentials, google_adc
from tests.wire_server import GOOGLE_TOKEN, HttpError, Text, WireServer

AZURE_KEY = "azk-cli-test-5b1e0c93d7"


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text)


def test_platform_defaults_to_direct_and_implies_its_protocol(rf_home: Path) -> None:
    assert load_config(rf_home, {}).model.platform == "direct"
    write_config(rf_home, "model:\n  platform: bedrock\n  name: anthropic.claude-x\n")
    model = load_config(rf_home, {"AWS_REGION": "us-west-2"}).model
    assert (model.protocol, model.region) == ("anthropic", "us-west-2")
    assert model.effective_endpoint == "https://bedrock-runtime.us-west-2.amazonaws.com"
    env = {"REVIEWFLOW_MODEL_PLATFORM": "vertex", "REVIEWFLOW_MODEL_NAME": "claude-opus-4-1"}
    assert load_config(rf_home, env).model.protocol == "anthropic"


def test_each_platform_reads_its_own_variables(rf_home: Path) -> None:
    vertex = load_config(
        rf_home,
        {
            "REVIEWFLOW_MODEL_PLATFORM": "vertex",
            "GOOGLE_CLOUD_PROJECT": "team-proj-1",
            "CLOUD_ML_REGION": "europe-west4",
        },
    ).model
    assert (vertex.project, vertex.region) == ("team-proj-1", "europe-west4")
    assert vertex.effective_endpoint == "https://europe-west4-aiplatform.googleapis.com"
    azure = load_config(
        rf_home,
        {
            "REVIEWFLOW_MODEL_PLATFORM": "azure",
            "AZURE_OPENAI_ENDPOINT": "https://contoso.openai.azure.com/",
            "OPENAI_API_VERSION": "2025-04-01-preview",
            "AZURE_OPENAI_API_KEY": AZURE_KEY,
            "OPENAI_API_KEY": "sk-not-for-azure",
        },
    ).model
    assert azure.endpoint == "https://contoso.openai.azure.com"
    assert azure.effective_api_version == "2025-04-01-preview"
    assert azure.api_key is not None and azure.api_key.get_secret_value() == AZURE_KEY
    write_config(rf_home, "model:\n  platform: vertex\n  region: us-east5\n")
    assert load_config(rf_home, {"CLOUD_ML_REGION": "asia-east1"}).model.region == "us-east5"


def test_another_vendors_key_never_goes_to_a_platform(rf_home: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-direct", "REVIEWFLOW_MODEL_PLATFORM": "bedrock"}
    assert load_config(rf_home, env).model.api_key is None  # SigV4 then, not Anthropic's key
    bedrock = load_config(rf_home, {**env, "AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-1"})
    assert bedrock.model.api_key is not None
    assert bedrock.model.api_key.get_secret_value() == "bedrock-api-key-1"
    write_config(rf_home, "model:\n  protocol: anthropic\n  api_key: sk-ant-file-key\n")
    assert load_config(rf_home, {"REVIEWFLOW_MODEL_PLATFORM": "bedrock"}).model.api_key is None
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AZURE_OPENAI_API_KEY"):
        assert name in KEY_ENV_VARS  # removed from the environment a local review runs in


@pytest.mark.parametrize(
    ("yaml", "env", "fragment"),
    [
        (
            "model:\n  platform: azure\n  protocol: gemini\n",
            {},
            "conflicting settings: 'model.platform' in",
        ),
        ("model:\n  platform: aws\n", {}, "bedrock (protocol anthropic)"),
        ("model:\n  region: US East 1\n", {}, "an AWS region such as us-east-1"),
        ("model:\n  api_version: latest\n", {}, "an Azure OpenAI api-version such as 2024-10-21"),
        ("", {"REVIEWFLOW_MODEL_PLATFORM": "gcp"}, "invalid value for REVIEWFLOW_MODEL_PLATFORM"),
        (
            "model:\n  platform: vertex\n",
            {"GOOGLE_CLOUD_PROJECT": "Bad Project"},
            "invalid value for GOOGLE_CLOUD_PROJECT: 'Bad Project' (accepted: a Google Cloud",
        ),
    ],
)
def test_bad_platform_settings_are_one_line(
    rf_home: Path, yaml: str, env: dict[str, str], fragment: str
) -> None:
    write_config(rf_home, yaml)
    with pytest.raises(ConfigError) as caught:
        load_config(rf_home, env)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_set_stores_platform_settings_as_typed(rf_home: Path) -> None:
    set_value(rf_home, "model.platform", "azure")
    set_value(rf_home, "model.api_version", "2024-10-21")  # YAML would read a date
    set_value(rf_home, "model.deployment", "gpt-4o-prod")
    text = (rf_home / "config.yaml").read_text()
    assert "api_version: '2024-10-21'" in text and "protocol" not in text
    config = load_config(rf_home, {})
    assert get_value(config, "model.api_version") == "2024-10-21"
    assert (config.model.protocol, config.model.effective_deployment) == (
        "openai",
        "gpt-4o-prod",
    )
    with pytest.raises(ConfigError, match=r"model\.platform"):
        set_value(rf_home, "model.protocol", "anthropic")


def test_handle_carries_the_platform_and_keeps_direct_cache_keys(wire: WireServer) -> None:
    direct = ProviderPool(wire.settings("openai"), 1)
    azure = ProviderPool(
        wire.platform_settings("azure", "openai", name="gpt-4o", key=AZURE_KEY, deployment="d1"), 1
    )
    with direct, azure:
        assert set(direct.handle.cache_identity()) == {"protocol", "model", "endpoint"}
        assert azure.handle.cache_identity()["deployment"] == "d1"
        dumped = azure.handle.model_dump_json()
        assert AZURE_KEY not in dumped
        again = ProviderHandle.model_validate_json(dumped).settings(None)
        assert (again.platform, again.deployment) == ("azure", "d1")
        sibling = azure.for_model("gpt-4o-mini")  # the verifier: its own deployment
        assert sibling.deployment is None and sibling.model == "gpt-4o-mini"


# --- `reviewflow config test` on each platform ---------------------------------------------


def _use_platform(
    kind: str, wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    """The environment of a user on platform `kind` whose endpoint is the wire server."""
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.url)
    monkeypatch.setenv("REVIEWFLOW_MODEL_TIMEOUT", "10s")
    if kind == "bedrock":
        aws_credentials(monkeypatch, tmp_path)
        monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "bedrock")
        monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "anthropic.claude-haiku-4-5-20251001-v1:0")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        return "anthropic"
    if kind == "azure":
        monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "azure")
        monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o")
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
        return "openai"
    google_adc(monkeypatch, tmp_path, wire)
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "vertex")
    name = "claude-sonnet-4-5@20250929" if kind == "vertex-claude" else "gemini-2.5-flash"
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", name)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    return "anthropic" if kind == "vertex-claude" else "gemini"


@pytest.mark.parametrize("kind", ["bedrock", "vertex-gemini", "vertex-claude", "azure"])
def test_config_test_on_each_platform(
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    kind: str,
) -> None:
    protocol = _use_platform(kind, wire, monkeypatch, tmp_path)
    wire.script(protocol, [Text("OK")])
    assert main(["config", "test"]) == 0
    out = capsys.readouterr().out
    platform = kind.split("-")[0]
    assert f"on {platform} at {wire.url}: OK" in out
    for secret in (AZURE_KEY, AWS_SECRET_KEY, AWS_SESSION_TOKEN, GOOGLE_TOKEN):
        assert secret not in out
    (record,) = wire.requests(protocol)
    assert record.platform == platform


@pytest.mark.parametrize(
    ("kind", "reply", "hint"),
    [
        (
            "bedrock",
            HttpError(
                403, {"message": "You don't have access to the model with the specified model ID."}
            ),
            "model access not granted",
        ),
        ("azure", HttpError(404), "deployment 'gpt-4o' not found"),
        ("vertex-claude", HttpError(404), "not enabled in Model Garden"),
    ],
)
def test_config_test_gives_the_platforms_hint(
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    kind: str,
    reply: HttpError,
    hint: str,
) -> None:
    protocol = _use_platform(kind, wire, monkeypatch, tmp_path)
    wire.script(protocol, [reply])
    assert main(["config", "test"]) == 2
    out = capsys.readouterr().err
    assert (
        out.startswith("reviewflow: error: ")
        and hint in out
        and AZURE_KEY not in out
        and GOOGLE_TOKEN not in out
    )
    assert len(wire.requests(protocol)) == 1  # no retry


def test_config_test_names_a_missing_region(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "bedrock")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "anthropic.claude-x")
    assert main(["config", "test"]) == 2
    out = capsys.readouterr().err
    assert "bedrock-runtime.REGION.amazonaws.com" in out
    assert "the bedrock platform needs a region" in out and "AWS_REGION" in out


def test_config_show_lists_the_platform_settings(
    rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(rf_home, "model:\n  platform: vertex\n  name: gemini-2.5-pro\n")
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "platform: vertex" in out and "protocol: gemini" in out and "region:" in out
    assert isinstance(load_config(rf_home, {}), Config)
