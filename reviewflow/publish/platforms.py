"""The code review platforms reviewflow publishes to, one spec each: how `--publish auto`
recognizes its CI, where the request and its SHAs come from (flags first, then CI variables),
the token's variables, the client class that speaks its API, the Git ref of a request's head
and the words and Markdown it takes. A new platform is a spec here, its client module and
its test fake; the publisher (`publisher.py`) decides the same way for every platform."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reviewflow.config import PublishSettings
from reviewflow.publish import azure_devops_target, bitbucket_target, gitea_target, locate
from reviewflow.publish.client import PlatformClient
from reviewflow.pullrequest.models import EventShas, Platform, RequestRef

Locator = Callable[[PublishSettings, Mapping[str, str]], tuple[RequestRef, EventShas]]


@dataclass(frozen=True)
class PlatformSpec:
    platform: Platform
    detect: Callable[[Mapping[str, str]], bool]
    """Whether `env` is this platform's CI (`--publish auto`); specs are asked in SPECS' order."""
    locate: Locator
    """The request and the SHAs its CI event names, from settings first, then CI variables;
    ConfigError naming the flag to give when one is missing."""
    token_env: tuple[str, ...]
    """The environment variables holding the token, first found wins."""
    client: str
    """`module:Class` of its `PlatformClient`, constructed `(ref, token, timeout_s)`."""
    request_head: str | None
    """The Git ref of request `{n}`'s head on the remote (None: the platform has none)."""
    full_history: str = "a full clone"
    """How its CI checks out the whole history (a shallow clone has no merge base to diff)."""
    noun: str = "pull request"
    suggestion: Callable[[int], str] | None = None
    """The info string of a one-click suggestion fence replacing N lines (None: prose only)."""

    def make_client(self, ref: RequestRef, token: str, timeout_s: float) -> PlatformClient:
        module, name = self.client.split(":")
        cls = getattr(importlib.import_module(module), name)
        client: PlatformClient = cls(ref, token, timeout_s)
        return client


# In the order `--publish auto` asks them: a platform whose CI also sets another's variables
# (Gitea and Forgejo Actions set GITHUB_ACTIONS) comes before that one.
SPECS: dict[Platform, PlatformSpec] = {
    spec.platform: spec
    for spec in (
        PlatformSpec(
            platform=Platform.GITEA,  # Forgejo too
            detect=gitea_target.detect,
            locate=gitea_target.locate,
            token_env=("REVIEWFLOW_GITEA_TOKEN", "GITEA_TOKEN"),
            client="reviewflow.publish.gitea:GiteaClient",
            request_head="refs/pull/{n}/head",
            full_history="actions/checkout with fetch-depth: 0",
        ),
        PlatformSpec(
            platform=Platform.GITHUB,
            detect=lambda env: env.get("GITHUB_ACTIONS") == "true",
            locate=locate.github,
            token_env=("REVIEWFLOW_GITHUB_TOKEN", "GITHUB_TOKEN"),
            client="reviewflow.publish.github:GitHubClient",
            request_head="refs/pull/{n}/head",
            full_history="actions/checkout with fetch-depth: 0",
            suggestion=lambda lines: "suggestion",
        ),
        PlatformSpec(
            platform=Platform.GITLAB,
            detect=lambda env: bool(env.get("GITLAB_CI")),
            locate=locate.gitlab,
            token_env=("REVIEWFLOW_GITLAB_TOKEN", "GITLAB_TOKEN"),
            client="reviewflow.publish.gitlab:GitLabClient",
            request_head="refs/merge-requests/{n}/head",
            full_history="the variable GIT_DEPTH: 0",
            noun="merge request",
            suggestion=lambda lines: f"suggestion:-{lines - 1}+0",
        ),
        PlatformSpec(
            platform=Platform.BITBUCKET,
            detect=bitbucket_target.detect,
            locate=bitbucket_target.bitbucket,
            token_env=("REVIEWFLOW_BITBUCKET_TOKEN", "BITBUCKET_TOKEN"),
            client="reviewflow.publish.bitbucket:bitbucket_client",  # Cloud or Data Center
            request_head=None,  # no pull request refs: the source branch is reviewed
            full_history="a full clone; Bitbucket Pipelines: clone: depth: full",
        ),
        PlatformSpec(
            platform=Platform.AZURE_DEVOPS,
            detect=azure_devops_target.detect,
            locate=azure_devops_target.locate,
            token_env=(
                "REVIEWFLOW_AZURE_DEVOPS_TOKEN",
                "AZURE_DEVOPS_EXT_PAT",
                "SYSTEM_ACCESSTOKEN",
            ),
            client="reviewflow.publish.azure_devops:AzureDevOpsClient",
            request_head=None,  # Azure Repos keeps only refs/pull/{n}/merge, a merge commit
            full_history="fetchDepth: 0 on the checkout step",
            suggestion=lambda lines: "suggestion",  # replaces the thread's lines
        ),
    )
}
TOKEN_ENV_VARS = tuple(name for spec in SPECS.values() for name in spec.token_env)


def spec_of(platform: Platform | str) -> PlatformSpec:
    return SPECS[Platform(platform)]
