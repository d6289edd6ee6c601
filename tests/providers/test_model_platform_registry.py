"""The cloud model platform registry (`reviewflow.config.platforms`): a plugin protocol runs on
every platform that carries its transport (a gateway speaking the OpenAI wire runs on Azure
OpenAI, not on Bedrock), and an installed package adds a model platform through the entry point
group `reviewflow.model_platforms` that the built-in protocols' adapters serve."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from flows.cli.main import main
from reviewflow.config import ModelSettings, load_config
from reviewflow.config.platforms import BUILTIN, CloudPlatformSpec, model_platform_names
from reviewflow.errors import ConfigError
from reviewflow.providers import ModelRequest, UserMessage, create_provider
from tests.wire_server import TEST_KEY, Text, WireServer

AZURE_KEY = "azk-registry-test-5d1e"
GATEWAY_KEY = "gwk-registry-test-9a0c"
# A gateway's protocol as a plugin ships it: a spec alone, speaking the OpenAI wire through the
# built-in adapter (which builds the client each platform carrying that wire needs).
GATEWAY = """
from reviewflow.config import ProtocolSpec

PROTOCOL = ProtocolSpec(
    name="gateway",
    default_endpoint="https://gateway.example.invalid/v1",
    adapter="reviewflow.providers.openai:create",
    key_env=("GATEWAY_API_KEY",),
    transport="openai",
)
"""
# A model platform as a plugin ships it: an OpenAI-compatible serving platform whose endpoint
# and key come from its own variables.
SERVING = """
from reviewflow.config.platforms import CloudPlatformSpec

PLATFORM = CloudPlatformSpec(
    name="serving",
    title="A serving platform",
    transports=("openai",),
    key_env=("SERVING_API_KEY",),
    env={"endpoint": ("SERVING_ENDPOINT",)},
    requires={"endpoint": ("its endpoint", "https://serving.example/v1")},
)
"""


def _install(site: Path, dist: str, group: str, entry: str, module: str, text: str) -> None:
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    (site / f"{module}.py").write_text(textwrap.dedent(text))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    _install(
        path,
        "rf_gateway",
        "reviewflow.protocols",
        "gateway = rf_gateway:PROTOCOL",
        "rf_gateway",
        GATEWAY,
    )
    yield path
    for name in [n for n in sys.modules if n.startswith("rf_")]:
        del sys.modules[name]


def _ask(settings: ModelSettings) -> None:
    provider = create_provider(settings)
    try:
        provider.complete(ModelRequest(messages=(UserMessage(content="hi"),), max_output_tokens=9))
    finally:
        provider.close()


@pytest.mark.usefixtures("site")
def test_a_plugin_protocol_runs_on_a_platform_that_carries_its_transport(
    wire: WireServer, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "azure")
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "gateway")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", wire.url)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    settings = load_config(rf_home, dict(os.environ)).model
    assert (settings.platform, settings.protocol) == ("azure", "gateway")
    wire.script("openai", [Text("OK")])
    _ask(settings)
    [sent] = wire.requests("openai")
    assert sent.platform == "azure" and sent.path == "/openai/deployments/gpt-4o/chat/completions"
    assert sent.headers["api-key"] == AZURE_KEY and "authorization" not in sent.headers

    wire.script("openai", [Text("OK")])  # and on its own endpoint, with its own key
    direct = wire.settings("openai").model_copy(
        update={"protocol": "gateway", "api_key": SecretStr(GATEWAY_KEY)}
    )
    _ask(direct)
    assert wire.requests("openai")[-1].credential == GATEWAY_KEY


@pytest.mark.usefixtures("site")
def test_a_platform_that_does_not_carry_the_transport_is_one_line(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValidationError, match=r"speaks the anthropic protocol, not gateway \("):
        ModelSettings(platform="bedrock", protocol="gateway", region="us-east-1")
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "vertex")
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "gateway")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "m")
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "the vertex platform speaks the gemini or anthropic protocol, not gateway" in err
    assert "(whose transport is openai)" in err


def test_a_protocol_runs_only_on_platforms_that_carry_its_wire() -> None:
    with pytest.raises(ValidationError, match="the azure platform speaks the openai protocol"):
        ModelSettings(platform="azure", protocol="gemini")


def test_a_plugin_model_platform_is_served_by_the_built_in_adapter(
    site: Path, wire: WireServer, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(
        site,
        "rf_serving",
        "reviewflow.model_platforms",
        "serving = rf_serving:PLATFORM",
        "rf_serving",
        SERVING,
    )
    assert model_platform_names() == (*BUILTIN, "serving")
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "serving")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "served-model")
    with pytest.raises(ConfigError, match="the serving platform needs its endpoint: run"):
        create_provider(load_config(rf_home, dict(os.environ)).model)
    monkeypatch.setenv("SERVING_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("SERVING_API_KEY", TEST_KEY)
    settings = load_config(rf_home, dict(os.environ)).model
    assert settings.protocol == "openai"  # the platform's first transport, implied
    wire.script("openai", [Text("OK")])
    _ask(settings)
    assert [r.credential for r in wire.requests("openai")] == [TEST_KEY]

    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "gateway")  # a plugin on a plugin
    wire.script("openai", [Text("OK")])
    _ask(load_config(rf_home, dict(os.environ)).model)
    assert len(wire.requests("openai")) == 2


def test_an_unknown_model_platform_names_what_is_accepted(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", "sagemaker")
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'sagemaker'" in err, err
    assert "bedrock" in err and "reviewflow.model_platforms" in err, err


def test_a_model_platform_spec_is_checked() -> None:
    with pytest.raises(ConfigError, match="not a lowercase word"):
        CloudPlatformSpec(name="Big Cloud", title="x")
    with pytest.raises(ConfigError, match="no setting 'zone' comes from a variable"):
        CloudPlatformSpec(name="cloud", title="x", env={"zone": ("ZONE",)})
