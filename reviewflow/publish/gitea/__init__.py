"""Gitea and Forgejo: the spec for the platform registry. The client is `client.py` (its REST
API in `api.py`), the request's locator `target.py`, its CI's detection `ci.py`."""

from __future__ import annotations

from reviewflow.platforms import PlatformSpec
from reviewflow.publish.gitea.ci import detect

PLATFORM = PlatformSpec(
    name="gitea",
    title="Gitea and Forgejo",
    detect=detect,
    locate="reviewflow.publish.gitea.target:locate",
    client="reviewflow.publish.gitea.client:GiteaClient",
    token_env=("REVIEWFLOW_GITEA_TOKEN", "GITEA_TOKEN"),
    ci_variables=("GITEA_ACTIONS", "FORGEJO_ACTIONS"),
    before=("github",),  # their Actions set GITHUB_ACTIONS too
    request_head="refs/pull/{n}/head",
    full_history="actions/checkout with fetch-depth: 0",
)
