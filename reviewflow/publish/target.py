"""Which pull/merge request to publish to, and with which token: from `publish.*` settings
(flags and config), else the platform's CI environment. Read by the CLI and the deployed flow
(never inside a task); the token never leaves `tokens.py`'s registry."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, SecretStr

from reviewflow.config import PublishSettings, PublishTarget
from reviewflow.errors import ConfigError, PublishSetupError
from reviewflow.pullrequest.models import Platform, RequestRef

GITHUB_API = "https://api.github.com"
GITLAB_API = "https://gitlab.com/api/v4"
TOKEN_ENV = {
    Platform.GITHUB: ("REVIEWFLOW_GITHUB_TOKEN", "GITHUB_TOKEN"),
    Platform.GITLAB: ("REVIEWFLOW_GITLAB_TOKEN", "GITLAB_TOKEN"),
}
TOKEN_ENV_VARS = tuple(name for names in TOKEN_ENV.values() for name in names)


class EventShas(BaseModel):
    """The base and head the CI event names (they match the checkout), when it names them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: str | None = None
    head: str | None = None


def platform_of(settings: PublishSettings, env: Mapping[str, str]) -> Platform | None:
    """The platform to publish to: `auto` is GitHub in GitHub Actions, GitLab in GitLab CI."""
    if settings.target is PublishTarget.OFF:
        return None
    if settings.target is PublishTarget.AUTO:
        if env.get("GITHUB_ACTIONS") == "true":
            return Platform.GITHUB
        return Platform.GITLAB if env.get("GITLAB_CI") else None
    return Platform(settings.target.value)


def request_ref(
    settings: PublishSettings, env: Mapping[str, str]
) -> tuple[RequestRef, EventShas] | None:
    """The request to publish to and the SHAs its CI event names (None: not publishing)."""
    platform = platform_of(settings, env)
    if platform is None:
        return None
    if platform is Platform.GITHUB:
        return _github(settings, env)
    return _gitlab(settings, env)


def _github(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    event = _github_event(env)
    found = event.get("pull_request")
    pull: dict[str, object] = found if isinstance(found, dict) else {}
    repo = settings.repo or env.get("GITHUB_REPOSITORY")
    number = settings.pull_request or _int(pull.get("number"))
    _require(repo, "--publish github needs the repository: --platform-repo OWNER/NAME")
    _require(number, "--publish github needs the pull request: --pull-request N")
    api = settings.api_url or env.get("GITHUB_API_URL") or GITHUB_API
    shas = EventShas()
    if not settings.pull_request or settings.pull_request == _int(pull.get("number")):
        shas = EventShas(base=_sha(pull, "base"), head=_sha(pull, "head"))
    ref = RequestRef(platform=Platform.GITHUB, repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas


def _gitlab(settings: PublishSettings, env: Mapping[str, str]) -> tuple[RequestRef, EventShas]:
    repo = settings.repo or env.get("CI_PROJECT_ID") or env.get("CI_PROJECT_PATH")
    event_iid = _int(env.get("CI_MERGE_REQUEST_IID"))
    number = settings.pull_request or event_iid
    _require(repo, "--publish gitlab needs the project: --platform-repo GROUP/NAME (or its ID)")
    _require(number, "--publish gitlab needs the merge request: --pull-request IID")
    api = settings.api_url or env.get("CI_API_V4_URL") or GITLAB_API
    shas = EventShas()
    if number == event_iid:
        shas = EventShas(
            base=env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
            head=env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or None,
        )
    ref = RequestRef(platform=Platform.GITLAB, repo=str(repo), number=int(number or 0), api_url=api)
    return ref, shas


def token_from_env(platform: Platform, env: Mapping[str, str]) -> SecretStr:
    """The platform's token from the environment; PublishSetupError (one line) without one."""
    for name in TOKEN_ENV[platform]:
        value = env.get(name, "").strip()
        if value:
            if not all("!" <= ch <= "~" for ch in value):
                raise PublishSetupError(f"{name} must be printable ASCII without spaces")
            return SecretStr(value)
    names = " or ".join(TOKEN_ENV[platform])
    raise PublishSetupError(f"--publish {platform.value} needs a token: set {names}")


def _github_event(env: Mapping[str, str]) -> dict[str, object]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"cannot read GITHUB_EVENT_PATH {path}: {err}") from None
    return data if isinstance(data, dict) else {}


def _sha(pull: dict[str, object], side: str) -> str | None:
    part = pull.get(side)
    sha = part.get("sha") if isinstance(part, dict) else None
    return sha if isinstance(sha, str) and sha else None


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _require(value: object, message: str) -> None:
    if not value:
        raise ConfigError(message)
