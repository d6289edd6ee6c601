"""Build the provider for the effective model settings, failing early on unusable settings."""

from __future__ import annotations

import os
from importlib.util import find_spec

from reviewflow.config import (
    DEFAULT_ENDPOINTS,
    KEY_FALLBACK_ENV,
    PLACEHOLDER_MODEL,
    ModelSettings,
    Platform,
    Protocol,
)
from reviewflow.config.platforms import AZURE_AD_TOKEN_ENV
from reviewflow.errors import ConfigError
from reviewflow.providers.base import Provider


class PlaceholderModelError(ConfigError):
    """The model name is still the placeholder default."""


class MissingKeyError(ConfigError):
    """No API key is configured for a protocol that needs one."""


class PlatformSettingError(ConfigError):
    """A cloud platform's setting (region, endpoint) is missing, or one it cannot use is set."""


def key_required(settings: ModelSettings) -> bool:
    """Whether a request with these settings needs an API key (local OpenAI servers do not;
    cloud platforms have credential chains of their own)."""
    if settings.platform is not Platform.DIRECT:
        return False
    if settings.protocol is Protocol.OPENAI:
        return settings.effective_endpoint == DEFAULT_ENDPOINTS["openai"]
    return True


def check_settings(settings: ModelSettings) -> None:
    """Raise ConfigError when the settings cannot make a request (placeholder name, no key)."""
    if settings.name == PLACEHOLDER_MODEL:
        raise PlaceholderModelError(
            f"no model configured (the model name is the placeholder '{PLACEHOLDER_MODEL}'): "
            "run `reviewflow config set model.name <model>` or set REVIEWFLOW_MODEL_NAME"
        )
    check_platform(settings)
    if settings.api_key is None and key_required(settings):
        names = " or ".join(KEY_FALLBACK_ENV[settings.protocol.value])
        raise MissingKeyError(
            f"no API key for the {settings.protocol.value} protocol: set REVIEWFLOW_MODEL_API_KEY "
            f"or {names}, or run `reviewflow config set model.api_key <key>`"
        )


def check_platform(settings: ModelSettings) -> None:
    """Raise PlatformSettingError when the platform lacks a setting it needs."""
    platform = settings.platform.value
    if settings.platform in (Platform.BEDROCK, Platform.VERTEX) and settings.region is None:
        names = "AWS_REGION" if settings.platform is Platform.BEDROCK else "GOOGLE_CLOUD_LOCATION"
        example = "us-east-1" if settings.platform is Platform.BEDROCK else "us-east5"
        raise PlatformSettingError(
            f"the {platform} platform needs a region: run `reviewflow config set model.region "
            f"{example}` or set {names}"
        )
    if settings.platform is Platform.BEDROCK and not all(map(find_spec, ("boto3", "botocore"))):
        raise PlatformSettingError(
            "the bedrock platform signs requests with botocore, which is not installed: "
            "pip install 'reviewflow[bedrock]'"
        )
    if settings.platform is Platform.VERTEX and settings.api_key is not None:
        raise PlatformSettingError(
            "the vertex platform signs requests with Google credentials, not an API key: unset "
            "model.api_key (and REVIEWFLOW_MODEL_API_KEY)"
        )
    if settings.platform is Platform.AZURE and settings.endpoint is None:
        raise PlatformSettingError(
            "the azure platform needs the resource's endpoint: run `reviewflow config set "
            "model.endpoint https://RESOURCE.openai.azure.com` or set AZURE_OPENAI_ENDPOINT"
        )
    if _needs_azure_identity(settings) and not _installed("azure.identity"):
        raise PlatformSettingError(
            "without AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN the azure platform signs in "
            "with azure-identity, which is not installed: pip install 'reviewflow[azure]'"
        )


def _needs_azure_identity(settings: ModelSettings) -> bool:
    """Azure with neither a key nor a ready-made Entra ID token: the default chain's turn."""
    return (
        settings.platform is Platform.AZURE
        and settings.api_key is None
        and not os.environ.get(AZURE_AD_TOKEN_ENV)
    )


def _installed(module: str) -> bool:
    """Whether `module` can be imported (a missing parent package counts as missing)."""
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def create_provider(settings: ModelSettings) -> Provider:
    """The adapter for `settings.protocol` on `settings.platform`, on the official SDK, with
    SDK retries off."""
    check_settings(settings)
    if settings.protocol is Protocol.OPENAI:
        from reviewflow.providers.openai import AzureOpenAIProvider, OpenAIProvider

        if settings.platform is Platform.AZURE:
            return AzureOpenAIProvider(settings)
        return OpenAIProvider(settings)
    if settings.protocol is Protocol.ANTHROPIC:
        from reviewflow.providers.anthropic import (
            AnthropicProvider,
            BedrockProvider,
            VertexAnthropicProvider,
        )

        if settings.platform is Platform.BEDROCK:
            return BedrockProvider(settings)
        if settings.platform is Platform.VERTEX:
            return VertexAnthropicProvider(settings)
        return AnthropicProvider(settings)
    from reviewflow.providers.gemini import GeminiProvider

    return GeminiProvider(settings)
