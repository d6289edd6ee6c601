"""Where an Azure DevOps pull request and its SHAs come from: `publish.*` settings (flags and
config) first, else Azure Pipelines' variables (`TF_BUILD`, `SYSTEM_COLLECTIONURI`,
`SYSTEM_TEAMPROJECT`, `BUILD_REPOSITORY_NAME`, `SYSTEM_PULLREQUEST_PULLREQUESTID`,
`SYSTEM_PULLREQUEST_SOURCECOMMITID`).

The request is `PROJECT/REPOSITORY` (`--platform-repo`) in the collection at `--api-url`
(`https://dev.azure.com/ORG`, or an Azure DevOps Server collection such as
`https://ado.example.com/tfs/DefaultCollection`). Azure Pipelines names no base commit (only
the target branch), so the base is the pull request's own `lastMergeTargetCommit`. No Azure
DevOps import here: the CLI reads this on every start."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError
from reviewflow.publish.locate import int_of, require
from reviewflow.pullrequest.models import EventShas, Platform, RequestRef


def detect(env: Mapping[str, str]) -> bool:
    """Azure Pipelines (`TF_BUILD=True`)."""
    return env.get("TF_BUILD", "").strip().lower() == "true"


def split_repo(repo: str) -> tuple[str, str]:
    """`PROJECT/REPOSITORY` as its two names; ConfigError otherwise."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise ConfigError(
            f"--publish azure needs the repository as PROJECT/REPOSITORY, not {repo!r}"
        )
    return parts[0], parts[1]


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    project, name = env.get("SYSTEM_TEAMPROJECT", ""), env.get("BUILD_REPOSITORY_NAME", "")
    repo = settings.repo or (f"{project}/{name}" if project and name else None)
    event_id = int_of(env.get("SYSTEM_PULLREQUEST_PULLREQUESTID"))
    number = settings.pull_request or event_id
    require(repo, "--publish azure needs the repository: --platform-repo PROJECT/REPOSITORY")
    require(number, "--publish azure needs the pull request: --pull-request N")
    split_repo(str(repo))
    api = settings.api_url or env.get("SYSTEM_COLLECTIONURI", "").strip().rstrip("/")
    require(api, "--publish azure needs the organization: --api-url https://dev.azure.com/ORG")
    shas = EventShas()
    if number == event_id:
        shas = EventShas(head=env.get("SYSTEM_PULLREQUEST_SOURCECOMMITID") or None)
    ref = RequestRef(
        platform=Platform.AZURE_DEVOPS, repo=str(repo), number=int(number or 0), api_url=api
    )
    return ref, shas
