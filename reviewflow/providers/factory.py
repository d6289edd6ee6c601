"""Build the provider for the effective model settings, failing early on unusable settings."""

from __future__ import annotations

from reviewflow.config import (
    DEFAULT_ENDPOINTS,
    KEY_FALLBACK_ENV,
    PLACEHOLDER_MODEL,
    ModelSettings,
    Protocol,
)
from reviewflow.errors import ConfigError
from reviewflow.providers.base import Provider


class PlaceholderModelError(ConfigError):
    """The model name is still the placeholder default."""


class MissingKeyError(ConfigError):
    """No API key is configured for a protocol that needs one."""


def key_required(settings: ModelSettings) -> bool:
    """Whether a request with these settings needs an API key (local OpenAI servers do not)."""
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
    if settings.api_key is None and key_required(settings):
        names = " or ".join(KEY_FALLBACK_ENV[settings.protocol.value])
        raise MissingKeyError(
            f"no API key for the {settings.protocol.value} protocol: set REVIEWFLOW_MODEL_API_KEY "
            f"or {names}, or run `reviewflow config set model.api_key <key>`"
        )


def create_provider(settings: ModelSettings) -> Provider:
    """The adapter for `settings.protocol`, on the official SDK, with SDK retries off."""
    check_settings(settings)
    if settings.protocol is Protocol.OPENAI:
        from reviewflow.providers.openai import OpenAIProvider

        return OpenAIProvider(settings)
    if settings.protocol is Protocol.ANTHROPIC:
        from reviewflow.providers.anthropic import AnthropicProvider

        return AnthropicProvider(settings)
    from reviewflow.providers.gemini import GeminiProvider

    return GeminiProvider(settings)
