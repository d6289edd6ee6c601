"""The built-in model protocols' specs, beside the adapters that speak them: each is what the
configuration reads of the protocol (`reviewflow.config.protocols.BUILTIN`: its endpoint and key
variables) with its adapter, and the modules the warm process imports ahead of a review.

`adapter_spec` is the spec any configured protocol is spoken by: a built-in one's from here, a
plugin's as its package registered it. Only these strings name the adapters, and they name
modules of this package: the configuration never names a module above it.
"""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config.protocols import BUILTIN as CONFIGURED
from reviewflow.config.protocols import ProtocolPluginError, ProtocolSpec, protocol_spec


def _builtin(name: str, adapter: str, warm: tuple[str, ...]) -> ProtocolSpec:
    """Built-in protocol `name` as the configuration reads it, spoken by `adapter`."""
    config = CONFIGURED[name]
    return ProtocolSpec(
        config.name,
        config.default_endpoint,
        adapter,
        key_env=config.key_env,
        key_at_default_endpoint_only=config.key_at_default_endpoint_only,
        warm=warm,
    )


BUILTIN: Mapping[str, ProtocolSpec] = {
    spec.name: spec
    for spec in (
        _builtin(
            "openai",
            "reviewflow.providers.openai:create",
            warm=(
                "reviewflow.providers.openai",
                "openai.resources.chat.completions.completions",
                "openai.lib.streaming.chat",
            ),
        ),
        _builtin(
            "anthropic",
            "reviewflow.providers.anthropic:create",
            warm=("reviewflow.providers.anthropic", "anthropic.resources.messages"),
        ),
        _builtin(
            "gemini",
            "reviewflow.providers.gemini:create",
            warm=("reviewflow.providers.gemini",),
        ),
    )
}


def adapter_spec(name: str) -> ProtocolSpec:
    """The spec of configured protocol `name`, naming its adapter (ConfigError when unknown,
    ProtocolPluginError when its plugin cannot be used)."""
    if name in BUILTIN:
        return BUILTIN[name]
    spec = protocol_spec(name)
    if not isinstance(spec, ProtocolSpec):  # a built-in of the configuration left out above
        raise ProtocolPluginError(f"the {name} protocol has no adapter")
    return spec
