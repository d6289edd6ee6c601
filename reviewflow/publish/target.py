"""Which pull/merge request to publish to, and with which token: from `publish.*` settings
(flags and config), else the platform's CI environment (each platform's spec in the registry,
`reviewflow.platforms`, knows its own). Read by the CLI and the deployed flow (never inside a task);
the token never leaves `tokens.py`'s registry."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import SecretStr

from reviewflow.config import PublishSettings
from reviewflow.errors import PublishSetupError
from reviewflow.platforms import platforms
from reviewflow.publish.platforms import spec_of
from reviewflow.pullrequest.models import EventShas, RequestRef


def platform_of(settings: PublishSettings, env: Mapping[str, str]) -> str | None:
    """The platform to publish to: `auto` is the platform whose CI this is (off elsewhere)."""
    if settings.target == "off":
        return None
    if settings.target == "auto":
        return next((p for p, spec in platforms().items() if spec.detect(env)), None)
    return settings.target


def request_ref(
    settings: PublishSettings, env: Mapping[str, str]
) -> tuple[RequestRef, EventShas] | None:
    """The request to publish to and the SHAs its CI event names (None: not publishing)."""
    platform = platform_of(settings, env)
    return None if platform is None else spec_of(platform).locator()(settings, env)


def token_variable(platform: str, env: Mapping[str, str]) -> str | None:
    """The environment variable the platform's token is read from: the first of its set."""
    return next((name for name in spec_of(platform).token_env if env.get(name, "").strip()), None)


def token_from_env(platform: str, env: Mapping[str, str]) -> SecretStr:
    """The platform's token from the environment; PublishSetupError (one line) without one."""
    name = token_variable(platform, env)
    if name is None:
        names = " or ".join(spec_of(platform).token_env)
        raise PublishSetupError(f"--publish {platform} needs a token: set {names}")
    value = env[name].strip()
    if not all("!" <= ch <= "~" for ch in value):
        raise PublishSetupError(f"{name} must be printable ASCII without spaces")
    return SecretStr(value)


def token_source(platform: str, env: Mapping[str, str], block: str | None) -> str:
    """Where the token in use came from, for a refusal's message."""
    name = token_variable(platform, env)
    if block or name is None:
        return f"from the Secret block {block!r}" if block else "handed to the review"
    names = spec_of(platform).token_env
    first = "" if len(names) == 1 else f", the first set of {', '.join(names)}"
    return f"from {name}{first}"
