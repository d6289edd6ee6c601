"""Build the provider for the effective model settings, failing early on unusable settings.

Where the model key must be: with the caller's own runner (threads, a LocalCluster it starts)
on the caller; with a remote Dask cluster (`review.dask_address`) a caller without one leaves it
to the workers (`key_on_workers`), which the runner's preflight asks before any request
(`flows.preflight`) and whose own pools check it where the requests are made.
"""

from __future__ import annotations

import importlib
import os
from importlib.util import find_spec

from reviewflow.config import (
    PLACEHOLDER_MODEL,
    Config,
    ModelSettings,
    Platform,
    ProtocolPluginError,
    TaskRunner,
    protocol_spec,
)
from reviewflow.config.platforms import AZURE_AD_TOKEN_ENV, model_platform
from reviewflow.config.schema import ENV_PREFIX
from reviewflow.errors import ConfigError
from reviewflow.providers.base import Provider
from reviewflow.providers.protocols import adapter_spec


class PlaceholderModelError(ConfigError):
    """The model name is still the placeholder default."""


class MissingKeyError(ConfigError):
    """No API key is configured for a protocol that needs one."""


class PlatformSettingError(ConfigError):
    """A cloud platform's setting (region, endpoint) is missing, or one it cannot use is set."""


def key_required(settings: ModelSettings) -> bool:
    """Whether a request with these settings needs an API key (local OpenAI servers do not;
    cloud platforms have credential chains of their own)."""
    if settings.platform != Platform.DIRECT:
        return False
    spec = protocol_spec(settings.protocol)
    if spec.key_at_default_endpoint_only:
        return settings.effective_endpoint == spec.default_endpoint
    return True


def key_on_workers(config: Config) -> bool:
    """Whether the review's requests are made on a remote Dask cluster's workers with the key
    of their own environment: a cluster address, and no key here for a protocol that needs one.
    (With a key here, nothing changes: the workers still use their own, never this one.)"""
    review = config.review
    remote = review.task_runner is TaskRunner.DASK and bool(review.dask_address)
    return remote and config.model.api_key is None and key_required(config.model)


def check_settings(settings: ModelSettings, *, key_elsewhere: bool = False) -> None:
    """Raise ConfigError when the settings cannot make a request (placeholder name, no key).

    `key_elsewhere`: the requests are made by processes that hold the key themselves (a remote
    cluster's workers, `key_on_workers`): no key is asked of this one."""
    if settings.name == PLACEHOLDER_MODEL:
        raise PlaceholderModelError(
            f"no model configured (the model name is the placeholder '{PLACEHOLDER_MODEL}'): "
            "run `reviewflow config set model.name <model>` or set REVIEWFLOW_MODEL_NAME"
        )
    check_platform(settings)
    if settings.api_key is None and key_required(settings) and not key_elsewhere:
        raise missing_key(settings)


def missing_key(settings: ModelSettings) -> MissingKeyError:
    """The one line for a request that has no key where it is made."""
    first, *others = key_variables(settings.protocol)
    names = "".join(f" or {name}" for name in others)
    return MissingKeyError(
        f"no API key for the {settings.protocol} protocol: set {first}"
        f"{names}, or run `reviewflow config set model.api_key <key>`"
    )


def key_variables(protocol: str) -> tuple[str, ...]:
    """The environment variables a process reads the `protocol`'s key from, in order."""
    return (f"{ENV_PREFIX}API_KEY", *protocol_spec(protocol).key_env)


def check_platform(settings: ModelSettings) -> None:
    """Raise PlatformSettingError when the platform lacks a setting it needs."""
    platform = settings.platform
    spec = model_platform(platform)
    for setting, (what, example) in spec.requires.items():
        if getattr(settings, setting) is None:
            names = "".join(f" or set {name}" for name in spec.env.get(setting, ())[:1])
            raise PlatformSettingError(
                f"the {platform} platform needs {what}: run `reviewflow config set "
                f"model.{setting} {example}`{names}"
            )
    if settings.platform == Platform.BEDROCK and not all(map(find_spec, ("boto3", "botocore"))):
        raise PlatformSettingError(
            "the bedrock platform signs requests with botocore, which is not installed: "
            "pip install 'reviewflow[bedrock]'"
        )
    if settings.platform == Platform.VERTEX and settings.api_key is not None:
        raise PlatformSettingError(
            "the vertex platform signs requests with Google credentials, not an API key: unset "
            "model.api_key (and REVIEWFLOW_MODEL_API_KEY)"
        )
    if _needs_azure_identity(settings) and not _installed("azure.identity"):
        raise PlatformSettingError(
            "without AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN the azure platform signs in "
            "with azure-identity, which is not installed: pip install 'reviewflow[azure]'"
        )


def _needs_azure_identity(settings: ModelSettings) -> bool:
    """Azure with neither a key nor a ready-made Entra ID token: the default chain's turn."""
    return (
        settings.platform == Platform.AZURE
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
    """The adapter the protocol's spec names (`adapter_spec`: reviewflow.providers.protocols),
    for `settings.platform`, on the official SDK, with SDK retries off."""
    check_settings(settings)
    spec = adapter_spec(settings.protocol)
    module, _, name = spec.adapter.partition(":")
    try:
        create = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ProtocolPluginError(
            f"the {spec.name} protocol's adapter {spec.adapter} cannot be loaded: {exc}"
        ) from None
    provider = create(settings)
    if not isinstance(provider, Provider):
        raise ProtocolPluginError(
            f"the {spec.name} protocol's adapter {spec.adapter} made no Provider"
        )
    return provider
