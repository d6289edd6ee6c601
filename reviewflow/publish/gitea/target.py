"""Where a Gitea or Forgejo pull request and its SHAs come from: `publish.*` settings (flags and
config) first, else Gitea/Forgejo Actions, which run GitHub-compatible jobs: `GITHUB_EVENT_PATH`
(the `pull_request` event), `GITHUB_REPOSITORY`, `GITHUB_API_URL` / `GITHUB_SERVER_URL`, plus
`GITEA_ACTIONS=true` (Gitea's act_runner and Forgejo's runner) or `FORGEJO_ACTIONS=true`
(Forgejo runner 7+), which tell them from GitHub Actions."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config import PublishSettings
from reviewflow.publish.gitea.ci import detect
from reviewflow.publish.locate import check_repo, int_of, json_event, require, sha_of
from reviewflow.pullrequest.models import EventShas, RequestRef


def api_url(settings: PublishSettings, env: Mapping[str, str]) -> str | None:
    """`--api-url` (the server's URL or its API's: `/api/v1` added when missing), else the
    job's API URL (`<server>/api/v1`), else the server's + `/api/v1`."""
    if settings.api_url:
        given = settings.api_url.strip().rstrip("/")
        return given if given.endswith("/api/v1") else f"{given}/api/v1"
    for name in ("GITEA_API_URL", "FORGEJO_API_URL", "GITHUB_API_URL"):
        value = env.get(name, "").strip().rstrip("/")
        if value.endswith("/api/v1"):
            return value
    for name in ("GITEA_SERVER_URL", "FORGEJO_SERVER_URL", "GITHUB_SERVER_URL"):
        value = env.get(name, "").strip().rstrip("/")
        if value:
            return f"{value}/api/v1"
    return None


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    event = json_event(env, "GITHUB_EVENT_PATH") if detect(env) else {}
    found = event.get("pull_request")
    pull: dict[str, object] = found if isinstance(found, dict) else {}
    repo = settings.repo or (env.get("GITHUB_REPOSITORY") if detect(env) else None)
    event_number = int_of(pull.get("number")) or int_of(event.get("number"))
    number = settings.pull_request or event_number
    api = api_url(settings, env)
    require(repo, "--publish gitea needs the repository: --platform-repo OWNER/NAME")
    require(number, "--publish gitea needs the pull request: --pull-request N")
    require(api, "--publish gitea needs the API: --api-url https://gitea.example.com/api/v1")
    check_repo(str(repo), "Gitea", "OWNER/NAME")
    shas = EventShas()
    if number == event_number:
        shas = EventShas(base=sha_of(pull, "base"), head=sha_of(pull, "head"))
    ref = RequestRef(platform="gitea", repo=str(repo), number=int(number or 0), api_url=str(api))
    return ref, shas
