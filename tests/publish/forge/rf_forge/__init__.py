"""Forge, a tiny code review platform: its spec for reviewflow's platform registry. The
locator is `target.py`, the client `client.py`; both are imported only when publishing."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.platforms import PlatformSpec


def detect(env: Mapping[str, str]) -> bool:
    """Forge's CI."""
    return env.get("FORGE_CI") == "true"


PLATFORM = PlatformSpec(
    name="forge",
    title="Forge",
    detect=detect,
    locate="rf_forge.target:locate",
    client="rf_forge.client:ForgeClient",
    token_env=("FORGE_TOKEN",),
    ci_variables=("FORGE_CI",),
    noun="change request",
)
