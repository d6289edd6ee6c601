"""GitHub (and GitHub Enterprise Server): its spec for the platform registry. The client is
`client.py` (REST and GraphQL, its errors in `failures.py`), the request's locator
`target.py`."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.platforms import PlatformSpec


def detect(env: Mapping[str, str]) -> bool:
    """GitHub Actions (Gitea's and Forgejo's Actions set it too: their spec comes first)."""
    return env.get("GITHUB_ACTIONS") == "true"


PLATFORM = PlatformSpec(
    name="github",
    title="GitHub",
    detect=detect,
    locate="reviewflow.publish.github.target:locate",
    client="reviewflow.publish.github.client:GitHubClient",
    token_env=("REVIEWFLOW_GITHUB_TOKEN", "GITHUB_TOKEN"),
    ci_variables=("GITHUB_ACTIONS",),
    request_head="refs/pull/{n}/head",
    full_history="actions/checkout with fetch-depth: 0",
    suggestion=lambda lines: "suggestion",
)
