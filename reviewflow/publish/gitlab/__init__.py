"""GitLab (gitlab.com and self-managed): its spec for the platform registry. The client is
`client.py` (its diff's line maps in `lines.py`), the request's locator `target.py`."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.platforms import PlatformSpec


def detect(env: Mapping[str, str]) -> bool:
    """GitLab CI."""
    return bool(env.get("GITLAB_CI"))


PLATFORM = PlatformSpec(
    name="gitlab",
    title="GitLab",
    detect=detect,
    locate="reviewflow.publish.gitlab.target:locate",
    client="reviewflow.publish.gitlab.client:GitLabClient",
    token_env=("REVIEWFLOW_GITLAB_TOKEN", "GITLAB_TOKEN"),
    ci_variables=("GITLAB_CI",),
    request_head="refs/merge-requests/{n}/head",
    full_history="the variable GIT_DEPTH: 0",
    noun="merge request",
    suggestion=lambda lines: f"suggestion:-{lines - 1}+0",
)
