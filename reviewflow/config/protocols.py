"""The model protocols reviewflow speaks, in one registry: for each, what reading the
configuration needs of it (its default endpoint, the variables its API key is read from) and,
for the spec a plugin registers, the adapter that speaks it, what the warm process imports ahead
of a review, and `config test`'s hints in its own terms.

The three built in (openai, anthropic, gemini) are listed here by what the configuration reads
of them (`ProtocolConfig`); their full specs, naming their adapters, sit beside those adapters
(`reviewflow.providers.protocols`), so nothing here names a module above the configuration. An
installed package adds one through the entry point group `reviewflow.protocols`, whose object
is a `ProtocolSpec`:

    [project.entry-points."reviewflow.protocols"]
    mistral = "reviewflow_mistral:PROTOCOL"

A new protocol is then one module (its spec and its `Provider`) and its wire tests. The specs
are plain data; the adapter is named by its import path and imported only when a request is
made, so reading the configuration never imports a model SDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from reviewflow.errors import ConfigError
from reviewflow.plugins import load_spec

ENTRY_POINT_GROUP = "reviewflow.protocols"
_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")


class ProtocolPluginError(ConfigError):
    """An installed protocol plugin cannot be used (it fails to load, or is not a spec)."""


@dataclass(frozen=True)
class ProtocolConfig:
    """What the configuration reads of one model protocol.

    `key_env` are the variables read for the API key after `REVIEWFLOW_MODEL_API_KEY`, in
    order. With `key_at_default_endpoint_only`, a request needs a key only at
    `default_endpoint` (local servers of the protocol take none). `transport` is the
    wire it speaks, for the cloud model platforms (`reviewflow.config.platforms`): unset, its own
    name; a plugin speaking a built-in protocol's wire through that protocol's adapter names it
    (`openai`) and runs on every platform that carries it.
    """

    name: str
    default_endpoint: str
    key_env: tuple[str, ...] = field(default=(), kw_only=True)
    key_at_default_endpoint_only: bool = field(default=False, kw_only=True)
    transport: str = field(default="", kw_only=True)

    @property
    def wire(self) -> str:
        """The transport a cloud platform must carry to serve this protocol."""
        return self.transport or self.name

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ProtocolPluginError(
                f"protocol name {self.name!r} is not a lowercase word of 2 to 31 letters, digits "
                "or dashes"
            )


@dataclass(frozen=True)
class ProtocolSpec(ProtocolConfig):
    """One model protocol with the adapter that speaks it (what a plugin registers).

    `adapter` is `module:function`, the function taking the effective `ModelSettings` and
    returning a `reviewflow.providers.base.Provider`. `warm` are modules the warm process
    imports before a review of this protocol (a module a newer SDK no longer has is skipped).
    `hints` replace `config test`'s hint for an outcome (`key_rejected`, `unknown_model`, ...).
    """

    adapter: str
    warm: tuple[str, ...] = field(default=(), kw_only=True)
    hints: Mapping[str, str] = field(default_factory=dict, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if ":" not in self.adapter:
            raise ProtocolPluginError(
                f"protocol {self.name}: adapter {self.adapter!r} is not module:function"
            )


BUILTIN: Mapping[str, ProtocolConfig] = {
    spec.name: spec
    for spec in (
        ProtocolConfig(
            "openai",
            "https://api.openai.com/v1",
            key_env=("OPENAI_API_KEY",),
            key_at_default_endpoint_only=True,
        ),
        ProtocolConfig("anthropic", "https://api.anthropic.com", key_env=("ANTHROPIC_API_KEY",)),
        ProtocolConfig(
            "gemini",
            "https://generativelanguage.googleapis.com",
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        ),
    )
}


def _plugins() -> dict[str, EntryPoint]:
    """The installed plugins' entry points by protocol name (none loaded; built-ins win)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def protocol_names() -> tuple[str, ...]:
    """Every protocol that can be configured: the built-in ones, then the plugins' by name."""
    return (*BUILTIN, *sorted(_plugins()))


def find_protocol(name: str) -> ProtocolConfig | None:
    """Protocol `name` (a plugin's: its `ProtocolSpec`), or None when neither built in nor
    installed. A built-in name is answered without reading the installed packages."""
    if name in BUILTIN:
        return BUILTIN[name]
    entry = _plugins().get(name)
    if entry is None:
        return None
    return load_spec(entry, name, ProtocolSpec, "protocol", ProtocolPluginError)


def protocol_spec(name: str) -> ProtocolConfig:
    """A configured protocol, as the configuration reads it (the schema has checked it
    exists); `reviewflow.providers.protocols.adapter_spec` adds its adapter."""
    spec = find_protocol(name)
    if spec is None:
        accepted = ", ".join(protocol_names())
        raise ConfigError(f"unknown model protocol {name!r} (accepted: {accepted})")
    return spec
