"""The small readers every platform's locator shares (each platform's own is its package's
`target.py`): a CI event's JSON file, SHAs and numbers in it, the repository's form, a
required value."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from reviewflow.errors import ConfigError


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
