"""Whether a run is Gitea's or Forgejo's CI: read by the spec (`--publish auto`) and the locator."""

from __future__ import annotations

from collections.abc import Mapping


def detect(env: Mapping[str, str]) -> bool:
    """Gitea or Forgejo Actions (both also set GITHUB_ACTIONS=true)."""
    return env.get("GITEA_ACTIONS") == "true" or env.get("FORGEJO_ACTIONS") == "true"
