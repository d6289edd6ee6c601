"""The model protocols reviewflow speaks, in one registry: for each, its default endpoint, the
variables its API key is read from, the adapter that speaks it, what the warm process imports
ahead of a review, and `config test`'s hints in its own terms.

The three built in (openai, anthropic, gemini) are listed here; an installed package adds one
through the entry point group `reviewflow.protocols`, whose object is a `ProtocolSpec`:

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

ENTRY_POINT_GROUP = "reviewflow.protocols"
_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")


class ProtocolPluginError(ConfigError):
    """An installed protocol plugin cannot be used (it fails to load, or is not a spec)."""


@dataclass(frozen=True)
class ProtocolSpec:
    """One model protocol.

    `adapter` is `module:function`, the function taking the effective `ModelSettings` and
    returning a `reviewflow.providers.base.Provider`. `key_env` are the variables read for the
    API key after `REVIEWFLOW_MODEL_API_KEY`, in order. With `key_at_default_endpoint_only`, a
    request needs a key only at `default_endpoint` (local servers of the protocol take none).
    `warm` are modules the warm process imports before a review of this protocol (a module a
    newer SDK no longer has is skipped). `hints` replace `config test`'s hint for an outcome
    (`key_rejected`, `unknown_model`, ...). `transport` is the wire it speaks, for the cloud
    model platforms (`reviewflow.config.platforms`): unset, its own name; a plugin speaking a
    built-in protocol's wire through that protocol's adapter names it (`openai`) and runs on
    every platform that carries it.
    """

    name: str
    default_endpoint: str
    adapter: str
    key_env: tuple[str, ...] = ()
    key_at_default_endpoint_only: bool = False
    warm: tuple[str, ...] = ()
    hints: Mapping[str, str] = field(default_factory=dict)
    transport: str = ""

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
        if ":" not in self.adapter:
            raise ProtocolPluginError(
                f"protocol {self.name}: adapter {self.adapter!r} is not module:function"
            )


BUILTIN: Mapping[str, ProtocolSpec] = {
    spec.name: spec
    for spec in (
        ProtocolSpec(
            name="openai",
            default_endpoint="https://api.openai.com/v1",
            adapter="reviewflow.providers.openai:create",
            key_env=("OPENAI_API_KEY",),
            key_at_default_endpoint_only=True,
            warm=(
                "reviewflow.providers.openai",
                "openai.resources.chat.completions.completions",
                "openai.lib.streaming.chat",
            ),
        ),
        ProtocolSpec(
            name="anthropic",
            default_endpoint="https://api.anthropic.com",
            adapter="reviewflow.providers.anthropic:create",
            key_env=("ANTHROPIC_API_KEY",),
            warm=("reviewflow.providers.anthropic", "anthropic.resources.messages"),
        ),
        ProtocolSpec(
            name="gemini",
            default_endpoint="https://generativelanguage.googleapis.com",
            adapter="reviewflow.providers.gemini:create",
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            warm=("reviewflow.providers.gemini",),
        ),
    )
}


def _plugins() -> dict[str, EntryPoint]:
    """The installed plugins' entry points by protocol name (none loaded; built-ins win)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def protocol_names() -> tuple[str, ...]:
    """Every protocol that can be configured: the built-in ones, then the plugins' by name."""
    return (*BUILTIN, *sorted(_plugins()))


def find_protocol(name: str) -> ProtocolSpec | None:
    """The spec of protocol `name`, or None when neither built in nor installed. A built-in
    name is answered without reading the installed packages."""
    if name in BUILTIN:
        return BUILTIN[name]
    entry = _plugins().get(name)
    if entry is None:
        return None
    where = f"the protocol plugin {name} ({entry.value})"
    try:
        spec = entry.load()
    except (ImportError, AttributeError) as exc:
        raise ProtocolPluginError(f"{where} cannot be loaded: {exc}") from None
    if not isinstance(spec, ProtocolSpec) or spec.name != name:
        raise ProtocolPluginError(f"{where} is not a ProtocolSpec named {name!r}")
    return spec


def protocol_spec(name: str) -> ProtocolSpec:
    """The spec of a configured protocol (the schema has checked it exists)."""
    spec = find_protocol(name)
    if spec is None:
        accepted = ", ".join(protocol_names())
        raise ConfigError(f"unknown model protocol {name!r} (accepted: {accepted})")
    return spec
