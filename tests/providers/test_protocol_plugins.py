"""The protocol registry: a protocol an installed package registers through the entry point
group `reviewflow.protocols` is configured, checked by `config test` and reviewed with like a
built-in one; unknown, broken and shadowing plugins fail plainly."""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config import Config, ModelSettings, load_config, protocol_names
from reviewflow.config.protocols import BUILTIN, ProtocolConfig, ProtocolSpec, protocol_spec
from reviewflow.errors import ConfigError
from reviewflow.providers import protocols
from reviewflow.providers.base import Provider
from reviewflow.providers.doctor import Outcome, check_model
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_review_e2e import LEAK, SPLIT, _repo
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, HttpError, Text, WireServer

# A plugin as a package would ship it: its spec and its adapter in one module (this one speaks
# the OpenAI wire through the built-in adapter, as a gateway's protocol might).
PLUGIN = """
from reviewflow.config import ProtocolSpec
from reviewflow.providers.openai import OpenAIProvider

PROTOCOL = ProtocolSpec(
    name="compat",
    default_endpoint="https://gateway.example.invalid/v1",
    adapter="rf_compat_plugin:create",
    key_env=("COMPAT_API_KEY",),
    hints={"key_rejected": "check COMPAT_API_KEY: the gateway refused it"},
)


class CompatProvider(OpenAIProvider):
    protocol = "compat"


def create(settings):
    return CompatProvider(settings)
"""


def _install(site: Path, dist: str, entry_points: str, modules: dict[str, str]) -> None:
    """A distribution on `site` as pip leaves one: its metadata, entry points and modules."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[reviewflow.protocols]\n{entry_points}\n")
    for name, text in modules.items():
        (site / f"{name}.py").write_text(textwrap.dedent(text))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for this test's plugins, their modules forgotten after it."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [n for n in sys.modules if n.startswith("rf_")]:
        del sys.modules[name]


@pytest.fixture
def compat(site: Path) -> Path:
    _install(site, "rf_compat", "compat = rf_compat_plugin:PROTOCOL", {"rf_compat_plugin": PLUGIN})
    return site


def _model_env(monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "compat")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gateway-large")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("COMPAT_API_KEY", TEST_KEY)


@pytest.mark.usefixtures("compat")
def test_a_plugin_protocol_is_listed_and_its_key_read_from_its_own_variable(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, wire: WireServer
) -> None:
    assert protocol_names() == ("openai", "anthropic", "gemini", "compat")
    _model_env(monkeypatch, wire)
    config = load_config(rf_home, dict(os.environ))
    assert config.model.protocol == "compat"
    assert config.model.api_key is not None and config.model.api_key.get_secret_value() == TEST_KEY


@pytest.mark.usefixtures("compat")
def test_config_test_goes_through_the_plugins_adapter_and_its_hints(
    rf_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire: WireServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _model_env(monkeypatch, wire)
    wire.script("openai", [Text("OK")])
    assert main(["config", "test"]) == 0
    assert "model compat/gateway-large" in capsys.readouterr().out
    assert [r.credential for r in wire.requests("openai")] == [TEST_KEY]

    wire.script("openai", [HttpError(401)])
    settings = wire.settings("openai").model_copy(update={"protocol": "compat"})
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.KEY_REJECTED
    assert report.hint == "check COMPAT_API_KEY: the gateway refused it"


@pytest.mark.usefixtures("compat", "prefect_harness")
def test_a_review_through_a_plugin_protocol(
    repo: GitRepo,
    rf_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    wire: WireServer,
    tmp_path: Path,
) -> None:
    _model_env(monkeypatch, wire)
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [LEAK, SPLIT]}))
    _repo(repo.root)
    out = tmp_path / "out"
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    assert main([*argv, "--report-dir", str(out)]) == 1  # the high finding gates
    report = json.loads((out / "review-report.json").read_text())
    assert report["status"] == "complete" and len(report["findings"]) == 1
    assert report["metadata"]["model"]["protocol"] == "compat"
    assert report["usage"]["requests"] == len(wire.requests("openai"))
    for path in [*out.iterdir(), *rf_home.rglob("*")]:
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


def test_an_unknown_protocol_is_one_line_naming_what_is_accepted(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "mistral")
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "REVIEWFLOW_MODEL_PROTOCOL: 'mistral'" in err
    assert "openai, anthropic, gemini" in err and "reviewflow.protocols" in err
    with pytest.raises(ConfigError, match="unknown model protocol 'mistral'"):
        protocol_spec("mistral")


def test_a_broken_plugin_is_named_when_it_is_configured(
    site: Path, rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(
        site,
        "rf_broken",
        "gone = rf_gone_plugin:PROTOCOL\nodd = rf_odd_plugin:PROTOCOL",
        {"rf_odd_plugin": "PROTOCOL = 'not a spec'\n"},
    )
    assert "gone" in protocol_names()  # listing loads nothing
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", "gone")
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the protocol plugin gone (rf_gone_plugin:PROTOCOL) cannot be loaded" in err
    with pytest.raises(ConfigError, match="is not a ProtocolSpec named 'odd'"):
        ModelSettings(protocol="odd")


def test_a_plugin_cannot_replace_a_built_in_protocol(site: Path) -> None:
    shadow = PLUGIN.replace('name="compat"', 'name="openai"')
    _install(site, "rf_shadow", "openai = rf_shadow_plugin:PROTOCOL", {"rf_shadow_plugin": shadow})
    assert protocol_names() == tuple(BUILTIN)
    assert protocol_spec("openai") is BUILTIN["openai"]
    assert "rf_shadow_plugin" not in sys.modules


def test_a_spec_with_an_unusable_name_or_adapter_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a lowercase word"):
        ProtocolSpec(name="My Proto", default_endpoint="https://x.invalid", adapter="m:f")
    with pytest.raises(ConfigError, match="is not module:function"):
        ProtocolSpec(name="mine", default_endpoint="https://x.invalid", adapter="m.f")


def test_the_built_in_specs_sit_beside_their_adapters_and_agree_with_the_configuration() -> None:
    """The configuration lists each built-in protocol by what it reads of it; the spec naming
    its adapter (in this package) is in reviewflow.providers.protocols, and a plugin's spec is
    the one it registered."""
    assert list(protocols.BUILTIN) == list(BUILTIN) == ["openai", "anthropic", "gemini"]
    for name, spec in protocols.BUILTIN.items():
        config = BUILTIN[name]
        assert type(config) is ProtocolConfig and isinstance(spec, ProtocolSpec)
        assert (spec.name, spec.default_endpoint, spec.key_env) == (
            config.name,
            config.default_endpoint,
            config.key_env,
        )
        assert spec.key_at_default_endpoint_only == config.key_at_default_endpoint_only
        module, _, function = spec.adapter.partition(":")
        assert module == f"reviewflow.providers.{name}" and module in spec.warm
        assert protocols.adapter_spec(name) is spec
    module, _, function = protocols.BUILTIN["anthropic"].adapter.partition(":")
    settings = ModelSettings(protocol="anthropic", name="m", api_key="k")
    provider = getattr(importlib.import_module(module), function)(settings)
    assert isinstance(provider, Provider) and provider.protocol == "anthropic"
    with pytest.raises(ConfigError, match="unknown model protocol 'mistral'"):
        protocols.adapter_spec("mistral")


@pytest.mark.usefixtures("compat")
def test_a_plugins_spec_is_the_one_its_package_registered() -> None:
    spec = protocols.adapter_spec("compat")
    assert spec is sys.modules["rf_compat_plugin"].PROTOCOL
    assert spec.adapter == "rf_compat_plugin:create" and protocol_spec("compat") is spec
