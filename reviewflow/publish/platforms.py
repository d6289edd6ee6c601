"""The publishing side of the platform registry (`reviewflow.platforms`): a request's platform
spec, and every platform's token variables. Each platform is its own package here
(`reviewflow/publish/<platform>/`: its spec, its locator, its client) or an installed plugin's;
the publisher (`publisher.py`) decides the same way for every platform."""

from __future__ import annotations

from reviewflow.platforms import PlatformSpec, platform_spec, token_variables

# Read once, when the CLI strips the tokens from what a review's children inherit.
TOKEN_ENV_VARS = token_variables()


def spec_of(platform: str) -> PlatformSpec:
    """The spec of a configured platform (built in or installed)."""
    return platform_spec(str(platform))
