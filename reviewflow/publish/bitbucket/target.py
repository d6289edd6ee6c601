"""Where a Bitbucket pull request and its SHAs come from: `publish.*` settings (flags and
config) first, else Bitbucket Pipelines' variables.

Pipelines sets `BITBUCKET_BUILD_NUMBER` in every build (`--publish auto` detects it),
`BITBUCKET_REPO_FULL_NAME` (WORKSPACE/REPO_SLUG), and in a pull request's pipeline
`BITBUCKET_PR_ID`, `BITBUCKET_COMMIT` (the source branch's commit) and
`BITBUCKET_PR_DESTINATION_COMMIT` (the destination's, often only its 12-hex prefix). A SHA is
taken only when it is a full one: without, `read()` gives the pull request's own commits, full
hashes from Bitbucket's API. The repository is `WORKSPACE/REPO_SLUG` on Cloud and
`PROJECT_KEY/REPO_SLUG` on Data Center: the same two parts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from reviewflow.config import PublishSettings
from reviewflow.publish.locate import check_repo, int_of, require
from reviewflow.pullrequest.models import EventShas, RequestRef

BITBUCKET_API = "https://api.bitbucket.org/2.0"
_FULL_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def locate(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    event_repo = env.get("BITBUCKET_REPO_FULL_NAME") or None
    repo = settings.repo or event_repo
    event_id = int_of(env.get("BITBUCKET_PR_ID"))
    number = settings.pull_request or event_id
    require(repo, "--publish bitbucket needs the repository: --platform-repo WORKSPACE/REPO_SLUG")
    require(number, "--publish bitbucket needs the pull request: --pull-request N")
    form = "WORKSPACE/REPO_SLUG (PROJECT_KEY/REPO_SLUG on Data Center)"
    check_repo(str(repo), "Bitbucket", form, personal=True)
    shas = EventShas()
    if number == event_id and repo == (event_repo or repo):
        shas = EventShas(
            base=_full(env.get("BITBUCKET_PR_DESTINATION_COMMIT")),
            head=_full(env.get("BITBUCKET_COMMIT")),
        )
    api = cloud_api(settings.api_url) or BITBUCKET_API
    ref = RequestRef(platform="bitbucket", repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas


def cloud_api(api_url: str | None) -> str | None:
    """`api_url`, or Cloud's API 2.0 when it names Bitbucket Cloud's host at all
    (`https://api.bitbucket.org`, `https://bitbucket.org`): any other URL is Data Center's."""
    try:
        host = urlsplit(api_url or "").hostname
    except ValueError:
        return api_url
    return BITBUCKET_API if host in ("api.bitbucket.org", "bitbucket.org") else api_url


def _full(sha: str | None) -> str | None:
    value = (sha or "").strip().lower()
    return value if _FULL_SHA.match(value) else None
