"""Case lists: what the harness reviews and the golden comments it scores against.

A case list is a JSON file: `{"name", "source": {...}, "cases": [...]}`. Each case names a
repository (any URL `git fetch` takes, `file://` included), the change (`base` and `head`
commits, or a GitHub pull request whose commits are resolved at run time) and its golden
comments (`comment`, `severity`, `category`, and `file` + `line` where the dataset gives them).
Nothing of a repository is vendored: the harness fetches it when it runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAMED = {"martian": HERE / "cases" / "martian.json", "swr": HERE / "cases" / "swr.json"}
_SHA = re.compile(r"^[0-9a-f]{40}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PULL_URL = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/pull/(\d+)$")


class QualityError(Exception):
    """Bad input or a step that cannot go on: one line in the user's terms (exit 2)."""


@dataclass(frozen=True, slots=True)
class Golden:
    comment: str
    severity: str | None = None
    category: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    repo: str
    golden: tuple[Golden, ...]
    title: str = ""
    url: str | None = None
    pull: int | None = None
    base: str | None = None
    head: str | None = None

    @property
    def pinned(self) -> bool:
        """True when the case names both commits (nothing to resolve before fetching)."""
        return self.base is not None and self.head is not None


@dataclass(frozen=True, slots=True)
class CaseList:
    name: str
    source: dict[str, Any]
    cases: tuple[Case, ...]
    path: Path


def resolve_cases_path(spec: str) -> Path:
    """`martian`, `swr` or a path to a case list file."""
    if spec in NAMED:
        path = NAMED[spec]
        if not path.exists():
            raise QualityError(
                f"--cases {spec}: {path} does not exist; build it from the dataset with "
                "`python bench/quality/importers.py swr DATASET.jsonl` (bench/quality/README.md)"
            )
        return path
    path = Path(spec)
    if not path.is_file():
        accepted = ", ".join(NAMED)
        raise QualityError(f"--cases {spec}: no such file (accepted: {accepted} or a JSON path)")
    return path


def load_cases(spec: str, only: list[str] | None = None) -> CaseList:
    """The case list `spec` names, checked; `only` keeps the cases with these ids."""
    path = resolve_cases_path(spec)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise QualityError(f"{path}: not a readable JSON case list ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise QualityError(f'{path}: expected an object with a "cases" list')
    cases = tuple(_case(item, f"{path}: cases[{n}]") for n, item in enumerate(data["cases"]))
    ids = [case.id for case in cases]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise QualityError(f"{path}: case id {dup!r} appears twice")
    if only:
        unknown = [i for i in only if i not in ids]
        if unknown:
            raise QualityError(f"--case {unknown[0]}: not in {path.name} (e.g. {ids[0]})")
        cases = tuple(case for case in cases if case.id in only)
    source = data["source"] if isinstance(data.get("source"), dict) else {}
    return CaseList(str(data.get("name") or path.stem), source, cases, path)


def _case(item: Any, where: str) -> Case:
    if not isinstance(item, dict):
        raise QualityError(f"{where}: expected an object")
    case_id = _text(item, "id", where)
    if not _ID.match(case_id):
        raise QualityError(f"{where}.id: {case_id!r} (accepted: letters, digits, . _ -)")
    repo = _text(item, "repo", where)
    base, head = item.get("base"), item.get("head")
    for key, value in (("base", base), ("head", head)):
        if value is not None and not (isinstance(value, str) and _SHA.match(value)):
            raise QualityError(f"{where}.{key}: {value!r} (accepted: a 40-hex commit or null)")
    pull = item.get("pull")
    if pull is not None and not (isinstance(pull, int) and pull > 0):
        raise QualityError(f"{where}.pull: {pull!r} (accepted: a pull request number)")
    if (base is None or head is None) and pull is None:
        raise QualityError(f"{where}: give base and head commits, or a pull request number")
    golden = item.get("golden")
    if not isinstance(golden, list):
        raise QualityError(f"{where}.golden: expected a list (empty for a clean change)")
    return Case(
        id=case_id,
        repo=repo,
        golden=tuple(_golden(g, f"{where}.golden[{n}]") for n, g in enumerate(golden)),
        title=str(item.get("title") or ""),
        url=item.get("url") if isinstance(item.get("url"), str) else None,
        pull=pull,
        base=base,
        head=head,
    )


def _golden(item: Any, where: str) -> Golden:
    if not isinstance(item, dict):
        raise QualityError(f"{where}: expected an object")
    line = item.get("line")
    if line is not None and not (isinstance(line, int) and line > 0):
        raise QualityError(f"{where}.line: {line!r} (accepted: a positive line number or null)")
    file = item.get("file")
    if file is not None and not (isinstance(file, str) and file):
        raise QualityError(f"{where}.file: {file!r} (accepted: a repository path or null)")
    return Golden(
        comment=_text(item, "comment", where),
        severity=_optional_text(item, "severity"),
        category=_optional_text(item, "category"),
        file=file,
        line=line,
    )


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise QualityError(f"{where}.{key}: {value!r} (accepted: a non-empty text)")
    return value


def _optional_text(item: dict[str, Any], key: str) -> str | None:
    value = item.get(key)
    return value if isinstance(value, str) and value else None


def github_pull(case: Case) -> tuple[str, str, int] | None:
    """(owner, repository, number) when the case is a GitHub pull request."""
    if case.pull is None:
        return None
    match = re.match(r"^https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?$", case.repo)
    return (match.group(1), match.group(2), case.pull) if match else None


def case_id_from_pull_url(url: str) -> tuple[str, str, int]:
    """(clone URL, case id, number) of `https://github.com/OWNER/REPO/pull/N`."""
    match = _PULL_URL.match(url)
    if not match:
        raise QualityError(f"{url}: not a GitHub pull request URL")
    owner, repo, number = match.group(1), match.group(2), int(match.group(3))
    return f"https://github.com/{owner}/{repo}", f"{owner}-{repo}-{number}", number
