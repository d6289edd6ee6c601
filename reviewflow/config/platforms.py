"""Cloud model platforms (`model.platform`), in one registry: for each, the transports it
carries (the wire protocols its endpoint speaks; the first is implied when model.protocol is not
set), its endpoint, the variables of its own tools that reviewflow reads (the key's, and those
supplying a setting the config leaves unset) and the settings it cannot do without.

A protocol runs on a platform that carries its transport (`ProtocolSpec.transport`: its own
name, or the built-in wire a plugin protocol speaks), so a plugin protocol speaking the OpenAI
wire runs on Azure OpenAI as on its own endpoint. `direct` (the protocol's own API) carries
every protocol. An installed package adds a platform through the entry point group
`reviewflow.model_platforms`, whose object is a `CloudPlatformSpec`; the adapters of the
protocols it carries build their clients for it.

Only the key variables become `model.api_key`; every other credential stays with the platform's
own chain, read by its SDK when a request is signed: botocore's for AWS (profile, environment,
role), Google's Application Default Credentials, the openai SDK's Entra ID token variable, else
azure-identity's default chain (environment, managed identity, `az login`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib.metadata import EntryPoint, entry_points

from pydantic_core import PydanticCustomError

from reviewflow.errors import ConfigError
from reviewflow.plugins import load_spec

ENTRY_POINT_GROUP = "reviewflow.model_platforms"
_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")
SETTINGS_FROM_ENV = ("region", "project", "endpoint", "api_version")


class Platform(StrEnum):
    """The built-in platforms' names (`model.platform` takes any registered one)."""

    DIRECT = "direct"
    BEDROCK = "bedrock"
    VERTEX = "vertex"
    AZURE = "azure"


class CloudPlatformPluginError(ConfigError):
    """An installed model platform plugin cannot be used (it fails to load, or is no spec)."""


@dataclass(frozen=True)
class CloudPlatformSpec:
    """One place a model is served.

    `transports` are the protocols (wires) its endpoint speaks, the first implied, and
    `implies` the protocol a model name implies, if any (Vertex AI: claude-* is anthropic); an
    empty `transports` carries every protocol (`direct`). `endpoint` is its endpoint for a
    region (None: its own endpoint is the user's, `model.endpoint`); `key_env` the variables of
    its API key, `env` those supplying each of `SETTINGS_FROM_ENV` left unset. `requires`
    names the settings a request cannot do without, each with what it is and an example.
    """

    name: str
    title: str
    transports: tuple[str, ...] = ()
    endpoint: Callable[[str], str] | None = None
    key_env: tuple[str, ...] = ()
    env: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    requires: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    implies: Callable[[str], str | None] | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise CloudPlatformPluginError(
                f"model platform name {self.name!r} is not a lowercase word of 2 to 31 letters, "
                "digits or dashes"
            )
        unknown = set(self.env) - set(SETTINGS_FROM_ENV)
        if unknown:
            raise CloudPlatformPluginError(
                f"model platform {self.name}: no setting {sorted(unknown)[0]!r} comes from a "
                f"variable (accepted: {', '.join(SETTINGS_FROM_ENV)})"
            )

    def carries(self, transport: str) -> bool:
        return not self.transports or transport in self.transports

    def implied_protocol(self, name: object) -> str:
        """The protocol this platform implies for model `name` when model.protocol is unset."""
        implied = self.implies(str(name or "")) if self.implies else None
        return implied or (self.transports[0] if self.transports else "openai")


def _vertex_endpoint(region: str) -> str:
    if region == "global":
        return "https://aiplatform.googleapis.com"
    return f"https://{region}-aiplatform.googleapis.com"


BUILTIN: Mapping[str, CloudPlatformSpec] = {
    spec.name: spec
    for spec in (
        CloudPlatformSpec(name="direct", title="the protocol's own API"),
        CloudPlatformSpec(
            name="bedrock",
            title="Amazon Bedrock",
            transports=("anthropic",),
            endpoint=lambda region: f"https://bedrock-runtime.{region}.amazonaws.com",
            key_env=("AWS_BEARER_TOKEN_BEDROCK",),  # a Bedrock API key; else SigV4 (botocore)
            env={"region": ("AWS_REGION", "AWS_DEFAULT_REGION")},
            requires={"region": ("a region", "us-east-1")},
        ),
        CloudPlatformSpec(
            name="vertex",
            title="Google Vertex AI",
            transports=("gemini", "anthropic"),
            endpoint=_vertex_endpoint,
            key_env=(),  # Google ADC only
            env={
                "region": ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"),
                "project": ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"),
            },
            requires={"region": ("a region", "us-east5")},
            implies=lambda name: "anthropic" if name.startswith("claude") else None,
        ),
        CloudPlatformSpec(
            name="azure",
            title="Azure OpenAI",
            transports=("openai",),
            key_env=("AZURE_OPENAI_API_KEY",),  # else an Entra ID token (AZURE_OPENAI_AD_TOKEN)
            env={"endpoint": ("AZURE_OPENAI_ENDPOINT",), "api_version": ("OPENAI_API_VERSION",)},
            requires={"endpoint": ("the resource's endpoint", "https://RESOURCE.openai.azure.com")},
        ),
    )
}
AZURE_AD_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"  # the openai SDK's own variable: a ready-made token
AZURE_API_VERSION = "2024-10-21"  # the GA version that takes max_completion_tokens


def _plugins() -> dict[str, EntryPoint]:
    """The installed plugins' entry points by platform name (none loaded; built-ins win)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}


def model_platform_names() -> tuple[str, ...]:
    """Every model platform that can be configured: the built-in ones, then the plugins'."""
    return (*BUILTIN, *sorted(_plugins()))


def find_model_platform(name: str) -> CloudPlatformSpec | None:
    """The spec of model platform `name`, or None when neither built in nor installed."""
    if name in BUILTIN:
        return BUILTIN[name]
    entry = _plugins().get(name)
    if entry is None:
        return None
    return load_spec(entry, name, CloudPlatformSpec, "model platform", CloudPlatformPluginError)


def model_platform(name: str) -> CloudPlatformSpec:
    """The spec of a configured model platform (the schema has checked it exists)."""
    spec = find_model_platform(name)
    if spec is None:
        accepted = ", ".join(model_platform_names())
        raise ConfigError(f"unknown model platform {name!r} (accepted: {accepted})")
    return spec


def builtin_key_variables() -> tuple[str, ...]:
    """The built-in platforms' key variables (a plugin's are in its spec)."""
    return tuple(name for spec in BUILTIN.values() for name in spec.key_env)


def implied_protocol(platform: str, name: object) -> str:
    """The protocol a platform implies for a model name when model.protocol is not set."""
    return model_platform(platform).implied_protocol(name)


def with_implied_protocol(data: object) -> object:
    """Raw model settings with the platform's protocol where model.protocol is not set."""
    if isinstance(data, dict) and data.get("platform") and not data.get("protocol"):
        try:
            spec = find_model_platform(str(data["platform"]))
        except ConfigError:
            return data  # the platform's own check names the bad value
        if spec is None:
            return data
        return {**data, "protocol": spec.implied_protocol(data.get("name"))}
    return data


def check_platform_protocol(platform: str, protocol: str | None, transport: str | None) -> str:
    """`platform`, if registered and carrying `transport` (the protocol's); else a ValueError
    naming what is accepted, or a `conflict` error naming what it carries and the other key
    (`reviewflow.config.messages` names where each value came from)."""
    spec = find_model_platform(platform)
    if spec is None:
        raise ValueError(f"unknown model platform {platform!r}")
    if protocol is None or transport is None or spec.carries(transport):
        return platform
    spoken = spec.transports
    via = "" if transport == protocol else f" (whose transport is {transport})"
    reason = (
        f"the {platform} platform speaks the {' or '.join(spoken)} protocol, not {protocol}{via}"
    )
    raise PydanticCustomError(
        "conflict",
        "{reason} (set model.protocol to {spoken}, or leave it unset)",
        {"reason": reason, "spoken": spoken[0], "other": "model.protocol", "value": protocol},
    )


def platform_endpoint(platform: str, region: str | None) -> str:
    """A platform's own endpoint (Azure's is the user's resource: a placeholder until set)."""
    spec = model_platform(platform)
    if spec.endpoint is None:
        return spec.requires.get("endpoint", ("", "https://ENDPOINT"))[1]
    return spec.endpoint(region or "REGION")  # shown only until the missing region is reported
