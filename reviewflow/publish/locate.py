"""Where a request and its SHAs come from on GitHub and GitLab: `publish.*` settings (flags and
config) first, else the CI's variables (GitHub Actions' event file, GitLab CI's `CI_*`), and
the small readers every platform's locator shares."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError
from reviewflow.pullrequest.models import EventShas, Platform, RequestRef

GITHUB_API = "https://api.github.com"
GITLAB_API = "https://gitlab.com/api/v4"


def github(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
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
    ref = RequestRef(platform=Platform.GITHUB, repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas


def gitlab(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
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
    ref = RequestRef(platform=Platform.GITLAB, repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas


def json_event(env: Mapping[str, str], variable: str) -> dict[str, object]:
    """The JSON object in the file the environment variable `variable` names ({} when unset)."""
    path = env.get(variable)
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read {variable} {path}: {err}") from None
    return data if isinstance(data, dict) else {}


def sha_of(pull: dict[str, object], side: str) -> str | None:
    part = pull.get(side)
    sha = part.get("sha") if isinstance(part, dict) else None
    return sha if isinstance(sha, str) and sha else None


def int_of(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


_NAME = re.compile(r"^[\w.-]+$")
_SPACED_NAME = re.compile(r"^[\w.-]+( [\w.-]+)*$")


def check_repo(
    repo: str, platform: str, form: str, *, spaces: bool = False, personal: bool = False
) -> None:
    """ConfigError unless `repo` is the two names of `form`, each of letters, digits, `_`, `.`
    and `-` (single inner spaces too where `spaces`), neither `.` nor `..`; the first may be
    `~USER` where `personal` (Bitbucket Data Center's personal repositories)."""
    names = (repo.removeprefix("~") if personal else repo).split("/")
    name = _SPACED_NAME if spaces else _NAME
    if len(names) != 2 or not all(name.match(n) and n.strip(".") for n in names):
        article = "an" if platform[0] in "AEIOU" else "a"
        raise ConfigError(f"--platform-repo {repo!r}: {article} {platform} repository is {form}")


def require(value: object, message: str) -> None:
    if not value:
        raise ConfigError(message)
