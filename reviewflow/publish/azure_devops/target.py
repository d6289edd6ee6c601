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
from urllib.parse import urlsplit

from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError
from reviewflow.publish.locate import check_repo, int_of, require
from reviewflow.pullrequest.models import EventShas, RequestRef


def split_repo(repo: str) -> tuple[str, str]:
    """`PROJECT/REPOSITORY` as its two names; ConfigError otherwise."""
    check_repo(repo, "Azure DevOps", "PROJECT/REPOSITORY", spaces=True)
    project, name = repo.split("/")
    return project, name


def check_collection(api_url: str) -> None:
    """ConfigError when `api_url` is plainly a project's or repository's page, not a collection
    (`https://dev.azure.com/ORG`, `https://ORG.visualstudio.com`, a server's `/tfs/NAME`)."""
    try:
        parts = urlsplit(api_url)
    except ValueError:
        return  # the client names an unusable URL
    path = [part for part in parts.path.split("/") if part]
    if "_git" in path or "_apis" in path or (parts.hostname == "dev.azure.com" and len(path) > 1):
        collection = f"https://dev.azure.com/{path[0]}" if path else "https://dev.azure.com/ORG"
        if parts.hostname != "dev.azure.com":
            collection = "the collection URL (https://dev.azure.com/ORG or a server's /tfs/NAME)"
        raise ConfigError(
            f"--api-url {api_url!r} is a project or repository page: give {collection}"
        )


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
    check_collection(api)
    shas = EventShas()
    if number == event_id:
        shas = EventShas(head=env.get("SYSTEM_PULLREQUEST_SOURCECOMMITID") or None)
    ref = RequestRef(platform="azure", repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas
