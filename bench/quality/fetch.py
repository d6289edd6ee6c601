"""Fetching a case at run time: one Git repository per source repository in a cache folder,
the case's two commits fetched into it by repository and commit (never vendored).

A case that names its commits is fetched as it is. A GitHub pull request without commits gets
them from GitHub's pull request API (`base.sha`, `head.sha`, as the Martian benchmark's own
step 0 does; `GITHUB_TOKEN` is sent when set, never written), and they are kept in the cache's
`resolved.json` so a later run asks no more. The head is fetched through the pull request's
ref (`pull/N/head`), which GitHub keeps after the branch is gone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality.cases import Case, QualityError, github_pull
from reviewflow.fsutil import write_output

API = "https://api.github.com"


@dataclass(frozen=True, slots=True)
class Fetched:
    repo: Path
    base: str
    head: str


def repo_dir(cache: Path, url: str) -> Path:
    """The cache folder of a source repository (its URL made a folder name)."""
    name = re.sub(r"^[a-z]+://", "", url.rstrip("/")).removesuffix(".git")
    return cache / "repos" / re.sub(r"[^A-Za-z0-9._-]+", "__", name)


def plan(case: Case, cache: Path) -> str:
    """What fetching this case would do, in one line (for `--dry-run`)."""
    known = _resolved(cache).get(case.id)
    base, head = (case.base, case.head) if case.pinned else (known or (None, None))
    where = repo_dir(cache, case.repo)
    if base and head and where.exists() and _has(where, base) and _has(where, head):
        return f"cached {base[:12]}..{head[:12]} in {where}"
    if base and head:
        return f"git fetch {case.repo} {base[:12]} {head[:12]}"
    pull = github_pull(case)
    assert pull is not None  # a case without commits is a pull request (load_cases checks)
    owner, name, number = pull
    return (
        f"GET {API}/repos/{owner}/{name}/pulls/{number}, then git fetch base + pull/{number}/head"
    )


def fetch(case: Case, cache: Path, env: dict[str, str]) -> Fetched:
    """The case's repository in the cache with both commits present (fetched if missing)."""
    base, head = resolve(case, cache, env)
    where = repo_dir(cache, case.repo)
    if not (where / ".git").exists():
        where.mkdir(parents=True, exist_ok=True)
        _git(where, "init", "-q")
    wanted = [sha for sha in (base, head) if not _has(where, sha)]
    if wanted:
        refs = list(wanted)
        if case.pull is not None and head in wanted:
            refs = [r for r in refs if r != head] + [
                f"+refs/pull/{case.pull}/head:refs/quality/pull-{case.pull}"
            ]
        _git(where, "fetch", "-q", "--no-tags", case.repo, *refs)
    for sha in (base, head):
        if not _has(where, sha):
            raise QualityError(f"commit {sha} is not in {case.repo} after fetching")
    return Fetched(where, base, head)


def resolve(case: Case, cache: Path, env: dict[str, str]) -> tuple[str, str]:
    """The case's base and head commits (asked of GitHub once, then kept in the cache)."""
    if case.base is not None and case.head is not None:
        return case.base, case.head
    known = _resolved(cache).get(case.id)
    if known:
        return known
    pull = github_pull(case)
    if pull is None:
        raise QualityError("no commits and not a GitHub pull request")
    data = _github(f"/repos/{pull[0]}/{pull[1]}/pulls/{pull[2]}", env)
    base, head = str(data["base"]["sha"]), str(data["head"]["sha"])
    table = _resolved(cache) | {case.id: (base, head)}
    payload = {k: {"base": b, "head": h} for k, (b, h) in sorted(table.items())}
    write_output(cache / "resolved.json", json.dumps(payload, indent=2) + "\n", 0o644)
    return base, head


def _resolved(cache: Path) -> dict[str, tuple[str, str]]:
    path = cache / "resolved.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: (v["base"], v["head"]) for k, v in data.items()}


def _github(path: str, env: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(API + path, headers={"Accept": "application/vnd.github+json"})
    token = env.get("GITHUB_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            data = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        raise QualityError(
            f"GitHub API {path}: HTTP {exc.code} (set GITHUB_TOKEN if rate-limited)"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise QualityError(f"GitHub API {path}: cannot connect ({exc})") from None
    if not isinstance(data, dict):
        raise QualityError(f"GitHub API {path}: unexpected answer")
    return data


def _has(repo: Path, sha: str) -> bool:
    if not (repo / ".git").exists():
        return False
    done = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True
    )
    return done.returncode == 0


def _git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise QualityError(f"git {args[0]} in {repo}: {last}")
