"""Cloud model platforms (`model.platform`): the protocols each speaks and the variables of
each platform's own tools that reviewflow reads.

Only the key variables become `model.api_key`; every other credential stays with the platform's
own chain, read by its SDK when a request is signed: botocore's for AWS (profile, environment,
role), Google's Application Default Credentials, the openai SDK's Entra ID token variable, else
azure-identity's default chain (environment, managed identity, `az login`).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic_core import PydanticCustomError


class Platform(StrEnum):
    """Where the model is called: its vendor's own API, or a cloud platform's."""

    DIRECT = "direct"
    BEDROCK = "bedrock"
    VERTEX = "vertex"
    AZURE = "azure"


# The protocols each cloud platform speaks; the first is implied when model.protocol is not set
# (on Vertex AI, a claude-* model implies anthropic). `direct` speaks every registered protocol
# (reviewflow.config.protocols) and implies openai.
PLATFORM_PROTOCOLS: dict[Platform, tuple[str, ...]] = {
    Platform.DIRECT: ("openai",),
    Platform.BEDROCK: ("anthropic",),
    Platform.VERTEX: ("gemini", "anthropic"),
    Platform.AZURE: ("openai",),
}
PLATFORM_KEY_ENV: dict[str, tuple[str, ...]] = {
    "bedrock": ("AWS_BEARER_TOKEN_BEDROCK",),  # a Bedrock API key; else SigV4 (botocore's chain)
    "vertex": (),  # Google ADC only
    "azure": ("AZURE_OPENAI_API_KEY",),  # else an Entra ID token (AZURE_OPENAI_AD_TOKEN)
}
AZURE_AD_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"  # the openai SDK's own variable: a ready-made token
# Settings a platform's own variable supplies when the config leaves them unset.
PLATFORM_ENV: dict[str, dict[str, tuple[str, ...]]] = {
    "region": {
        "bedrock": ("AWS_REGION", "AWS_DEFAULT_REGION"),
        "vertex": ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"),
    },
    "project": {"vertex": ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID")},
    "endpoint": {"azure": ("AZURE_OPENAI_ENDPOINT",)},
    "api_version": {"azure": ("OPENAI_API_VERSION",)},
}
AZURE_API_VERSION = "2024-10-21"  # the GA version that takes max_completion_tokens


def implied_protocol(platform: Platform, name: object) -> str:
    """The protocol a platform implies for a model name when model.protocol is not set."""
    if platform is Platform.VERTEX and str(name or "").startswith("claude"):
        return "anthropic"
    return PLATFORM_PROTOCOLS[platform][0]


def with_implied_protocol(data: object) -> object:
    """Raw model settings with the platform's protocol where model.protocol is not set."""
    if isinstance(data, dict) and data.get("platform") and not data.get("protocol"):
        try:
            platform = Platform(data["platform"])
        except ValueError:
            return data  # the platform's own check names the bad value
        return {**data, "protocol": implied_protocol(platform, data.get("name"))}
    return data


def check_platform_protocol(platform: Platform, protocol: str | None) -> Platform:
    """`platform`, if it speaks `protocol`; else a `conflict` error naming what it speaks and
    the other key (`reviewflow.config.messages` names where each value came from)."""
    spoken = PLATFORM_PROTOCOLS[platform]
    if platform is not Platform.DIRECT and protocol is not None and protocol not in spoken:
        reason = (
            f"the {platform.value} platform speaks the {' or '.join(spoken)} protocol, "
            f"not {protocol}"
        )
        raise PydanticCustomError(
            "conflict",
            "{reason} (set model.protocol to {spoken}, or leave it unset)",
            {"reason": reason, "spoken": spoken[0], "other": "model.protocol", "value": protocol},
        )
    return platform


def platform_endpoint(platform: Platform, region: str | None) -> str:
    """A platform's own endpoint (Azure's is the user's resource: a placeholder until set)."""
    region = region or "REGION"  # shown only until the missing region is reported
    if platform is Platform.BEDROCK:
        return f"https://bedrock-runtime.{region}.amazonaws.com"
    if platform is Platform.VERTEX:
        if region == "global":
            return "https://aiplatform.googleapis.com"
        return f"https://{region}-aiplatform.googleapis.com"
    return "https://RESOURCE.openai.azure.com"
