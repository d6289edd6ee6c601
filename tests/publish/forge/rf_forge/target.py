"""Where a Forge change request comes from: the flags first, else Forge CI's variables."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config import PublishSettings
from reviewflow.publish.locate import check_repo, int_of, require
from reviewflow.pullrequest.models import EventShas, RequestRef
from rf_forge import detect


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    ci = detect(env)
    repo = settings.repo or (env.get("FORGE_REPOSITORY") if ci else None)
    number = settings.pull_request or (int_of(env.get("FORGE_REQUEST")) if ci else None)
    api = settings.api_url or (env.get("FORGE_API_URL") if ci else None)
    require(repo, "--publish forge needs the repository: --platform-repo OWNER/NAME")
    require(number, "--publish forge needs the change request: --pull-request N")
    require(api, "--publish forge needs the API: --api-url URL")
    check_repo(str(repo), "Forge", "OWNER/NAME")
    ref = RequestRef(platform="forge", repo=str(repo), number=int(number or 0), api_url=str(api))
    return ref, EventShas()
