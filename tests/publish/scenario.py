"""A pull/merge request's life, reviewed through the CLI or the `ci-review` deployment and
published to a platform's fake: a real repository, the scripted model, the fakes (GitHub's and
GitLab's sides here, the others' in `<platform>_side.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from reviewflow.git.parse import parse_unified_diff
from reviewflow.publish.platforms import spec_of
from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.deploy.scenario import BASE, RISKY
from tests.gitutil import GitRepo
from tests.publish import fake_github, fake_gitlab
from tests.wire_server import TEST_KEY, WireServer

NUMBER = 7
PROJECT = "acme/app"
FIXED = RISKY.replace("text.splitlines())", 'text.splitlines() if "=" in line)')
EXTRA = '''"""Extra settings."""


def merge(a, b):
    a.update(b)
    return a
'''
SPLIT = {
    "severity": "high",
    "category": "correctness",
    "file": "app/settings.py",
    "existing_code": '    return dict(line.split("=", 1) for line in text.splitlines())',
    "title": "Lines without '=' crash parse",
    "problem": "ValueError on a line without '='",
    "evidence": "split result unpacked into pairs",
    "suggestion": "skip malformed lines",
    "confidence": 0.9,
}
LEAK = {
    **SPLIT,
    "existing_code": "    handle = open(path)",
    "title": "File handle never closed",
    "problem": "open() without close",
    "suggestion": "```python\n    with open(path) as handle:\n```",
}
MUTATES = {
    **SPLIT,
    "severity": "low",
    "file": "app/extra.py",
    "existing_code": "    a.update(b)",
    "title": "merge mutates its first argument",
    "problem": "callers' dicts change",
}


def commentable(repo: GitRepo, base: str, head: str) -> dict[str, set[int]]:
    """The new-side lines inside the hunks of the request's diff (what a platform accepts)."""
    diff = repo.git("diff", "--no-color", f"{base}...{head}")
    out: dict[str, set[int]] = {}
    for item in parse_unified_diff(diff):
        lines = out.setdefault(item.path, set())
        for hunk in item.hunks:
            lines.update(range(hunk.new_start, hunk.new_start + hunk.new_count))
    return out


@dataclass(frozen=True)
class Posted:
    """A thread of ours as the platform holds it."""

    id: str
    fingerprint: str
    resolved: bool
    replies: tuple[str, ...]


class Side(Protocol):
    """One platform's fake, as the scenario drives it."""

    name: str

    def open(self, repo: GitRepo, base: str, head: str) -> None: ...
    def push(self, repo: GitRepo, base: str, head: str) -> None: ...
    def posted(self) -> list[Posted]: ...
    def summaries(self) -> list[str]: ...
    def dismiss(self, thread_id: str, text: str) -> None: ...
    def resolve(self, thread_id: str) -> None: ...
    def reopen(self, thread_id: str) -> None: ...
    def env(self, token: str | None = None) -> dict[str, str]: ...
    def token(self) -> str: ...


class GitHubSide:
    name = "github"

    def __init__(self, fake: fake_github.FakeGitHub) -> None:
        self.fake = fake
        self.event: Path | None = None

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        lines = commentable(repo, base, head)
        self.fake.add_pull(NUMBER, commentable=lines, repo=PROJECT, base_sha=base, head_sha=head)
        self._event(repo, base, head)

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        self.fake.push(NUMBER, head, commentable(repo, base, head), repo=PROJECT)
        self._event(repo, base, head)

    def _event(self, repo: GitRepo, base: str, head: str) -> None:
        self.event = repo.root.parent / "event.json"
        pull = {"number": NUMBER, "base": {"sha": base}, "head": {"sha": head}}
        self.event.write_text(json.dumps({"pull_request": pull}))

    def posted(self) -> list[Posted]:
        return [
            Posted(
                t.id,
                finding_fingerprint(t.comments[0].body) or "",
                t.resolved,
                tuple(c.body for c in t.comments[1:]),
            )
            for t in self.fake.threads(NUMBER, repo=PROJECT)
        ]

    def summaries(self) -> list[str]:
        return [c.body for c in self.fake.issue_comments(NUMBER, repo=PROJECT)]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(thread_id, text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_resolves(thread_id, "bob")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_unresolves(thread_id)

    def token(self) -> str:
        return fake_github.TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        assert self.event is not None
        return {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_REPOSITORY": PROJECT,
            "GITHUB_API_URL": self.fake.api_url,
            "GITHUB_TOKEN": token or fake_github.TOKEN,
        }


class GitLabSide:
    name = "gitlab"

    def __init__(self, fake: fake_gitlab.FakeGitLab) -> None:
        self.fake = fake

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        self.fake.add_merge_request(
            PROJECT, NUMBER, head_sha=head, base_sha=base, commentable=commentable(repo, base, head)
        )

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        self.fake.push(NUMBER, head, base, base, commentable(repo, base, head))

    def posted(self) -> list[Posted]:
        out = []
        for discussion in self.fake.discussions(NUMBER):
            notes = [n for n in discussion["notes"] if not n.get("system")]
            fingerprint = finding_fingerprint(notes[0]["body"]) if notes else None
            if fingerprint:
                resolved = all(n.get("resolved") for n in notes if n.get("resolvable"))
                out.append(
                    Posted(
                        discussion["id"], fingerprint, resolved, tuple(n["body"] for n in notes[1:])
                    )
                )
        return out

    def summaries(self) -> list[str]:
        return [n["body"] for n in self.fake.notes(NUMBER) if summary_state(n["body"]) is not None]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(thread_id, text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_resolves(thread_id, "bob")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_unresolves(thread_id, "bob")

    def token(self) -> str:
        return fake_gitlab.BOT_TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        return {
            "GITLAB_CI": "true",
            "CI_PROJECT_ID": PROJECT,
            "CI_MERGE_REQUEST_IID": str(NUMBER),
            "CI_API_V4_URL": self.fake.api_url,
            "GITLAB_TOKEN": token or fake_gitlab.BOT_TOKEN,
        }


@dataclass
class PullRequest:
    """The repository behind a request: `main`, and the request's commits on `feature`."""

    repo: GitRepo
    bare: Path
    side: Side
    base: str = ""
    head: str = ""
    heads: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path, side: Side) -> PullRequest:
        repo = GitRepo.init(root / "work")
        repo.write("app/settings.py", BASE)
        base = repo.commit("base")
        bare = root / "origin.git"
        repo.git("clone", "--bare", "--quiet", str(repo.root), str(bare))
        repo.git("remote", "add", "origin", str(bare))
        repo.git("checkout", "-q", "-b", "feature")
        pr = cls(repo, bare, side, base)
        pr.commit({"app/settings.py": RISKY}, "read settings")
        side.open(repo, base, pr.head)
        return pr

    def commit(self, files: dict[str, str], message: str) -> str:
        for path, text in files.items():
            self.repo.write(path, text)
        self.head = self.repo.commit(message)
        self.heads.append(self.head)
        # the request's head ref where its platform has one, else its source branch
        ref = spec_of(self.side.name).request_head or "refs/heads/feature"
        self.repo.git(
            "push", "--quiet", "--force", "origin", f"HEAD:{ref.format(n=NUMBER)}", "main"
        )
        return self.head

    def push(self, files: dict[str, str], message: str) -> None:
        self.commit(files, message)
        self.side.push(self.repo, self.base, self.head)

    def force_push(self, files: dict[str, str]) -> None:
        """The branch rewritten: one new commit on `main` holding the same final files."""
        self.repo.git("checkout", "-q", "-B", "feature", "main")
        self.push(files, "squashed")


def use_env(monkeypatch: pytest.MonkeyPatch, wire: WireServer, env: dict[str, str]) -> None:
    for name, value in {
        "REVIEWFLOW_MODEL_PROTOCOL": "openai",
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
        **env,
    }.items():
        monkeypatch.setenv(name, value)
