"""Where a GitHub pull request and its SHAs come from: `publish.*` settings (flags and
config) first, else GitHub Actions' event file (`GITHUB_EVENT_PATH`) and variables."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config import PublishSettings
from reviewflow.publish.locate import check_repo, int_of, json_event, require, sha_of
from reviewflow.pullrequest.models import EventShas, RequestRef

GITHUB_API = "https://api.github.com"


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    event = json_event(env, "GITHUB_EVENT_PATH")
    found = event.get("pull_request")
    pull: dict[str, object] = found if isinstance(found, dict) else {}
    repo = settings.repo or env.get("GITHUB_REPOSITORY")
    number = settings.pull_request or int_of(pull.get("number"))
    require(repo, "--publish github needs the repository: --platform-repo OWNER/NAME")
    require(number, "--publish github needs the pull request: --pull-request N")
    check_repo(str(repo), "GitHub", "OWNER/NAME")
    api = settings.api_url or env.get("GITHUB_API_URL") or GITHUB_API
    shas = EventShas()
    if not settings.pull_request or settings.pull_request == int_of(pull.get("number")):
        shas = EventShas(base=sha_of(pull, "base"), head=sha_of(pull, "head"))
    ref = RequestRef(platform="github", repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas
