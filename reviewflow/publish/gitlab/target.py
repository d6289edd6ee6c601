"""Where a GitLab merge request and its SHAs come from: `publish.*` settings (flags and
config) first, else GitLab CI's `CI_*` variables."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.config import PublishSettings
from reviewflow.publish.locate import int_of, require
from reviewflow.pullrequest.models import EventShas, RequestRef

GITLAB_API = "https://gitlab.com/api/v4"


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    repo = settings.repo or env.get("CI_PROJECT_ID") or env.get("CI_PROJECT_PATH")
    event_iid = int_of(env.get("CI_MERGE_REQUEST_IID"))
    number = settings.pull_request or event_iid
    require(repo, "--publish gitlab needs the project: --platform-repo GROUP/NAME (or its ID)")
    require(number, "--publish gitlab needs the merge request: --pull-request IID")
    api = settings.api_url or env.get("CI_API_V4_URL") or GITLAB_API
    shas = EventShas()
    if number == event_iid:
        shas = EventShas(
            base=env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
            head=env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or None,
        )
    ref = RequestRef(platform="gitlab", repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas
