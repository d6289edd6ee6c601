"""Azure DevOps Repos (Services and Server): the spec for the platform registry (`--publish
azure`; not `model.platform: azure`, Azure OpenAI). The client is `client.py` (its REST wire
in `wire.py`), the request's locator `target.py`."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.platforms import PlatformSpec


def detect(env: Mapping[str, str]) -> bool:
    """Azure Pipelines (`TF_BUILD=True`) building an Azure Repos repository: a pipeline of a
    GitHub or Bitbucket repository (`BUILD_REPOSITORY_PROVIDER`) publishes there only when
    asked (`--publish github` with its flags)."""
    provider = env.get("BUILD_REPOSITORY_PROVIDER", "TfsGit").strip().lower()
    return env.get("TF_BUILD", "").strip().lower() == "true" and provider in ("tfsgit", "")


PLATFORM = PlatformSpec(
    name="azure",
    title="Azure DevOps",
    detect=detect,
    locate="reviewflow.publish.azure_devops.target:locate",
    client="reviewflow.publish.azure_devops.client:AzureDevOpsClient",
    token_env=("REVIEWFLOW_AZURE_DEVOPS_TOKEN", "AZURE_DEVOPS_EXT_PAT", "SYSTEM_ACCESSTOKEN"),
    ci_variables=("TF_BUILD",),
    request_head=None,  # Azure Repos keeps only refs/pull/{n}/merge, a merge commit
    full_history="fetchDepth: 0 on the checkout step",
    suggestion=lambda lines: "suggestion",  # replaces the thread's lines
)
