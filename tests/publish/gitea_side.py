"""The life test's Gitea side (`scenario.Side`): the fake Gitea as Gitea Actions drives it (a
GitHub-compatible event file, GITEA_ACTIONS, the job's API URL and token)."""

from __future__ import annotations

import json
from pathlib import Path

from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.gitutil import GitRepo
from tests.publish import fake_gitea
from tests.publish.scenario import NUMBER, PROJECT, Posted, commentable


class GiteaSide:
    name = "gitea"

    def __init__(self, fake: fake_gitea.FakeGitea) -> None:
        self.fake = fake
        self.event: Path | None = None

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        lines = commentable(repo, base, head)
        self.fake.add_pull(PROJECT, NUMBER, head_sha=head, base_sha=base, commentable=lines)
        self._event(repo, base, head)

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        self.fake.push(PROJECT, NUMBER, head, commentable(repo, base, head))
        self._event(repo, base, head)

    def _event(self, repo: GitRepo, base: str, head: str) -> None:
        self.event = repo.root.parent / "event.json"
        pull = {"number": NUMBER, "base": {"sha": base}, "head": {"sha": head}}
        self.event.write_text(json.dumps({"number": NUMBER, "pull_request": pull}))

    def posted(self) -> list[Posted]:
        """Our threads as Gitea holds them: a finding's comment and the comments after it on
        its path and line (up to the next finding's there); resolved when it has a resolver."""
        comments = sorted(self.fake.pull(PROJECT, NUMBER).comments, key=lambda c: c["id"])
        out: list[Posted] = []
        for root in comments:
            fingerprint = finding_fingerprint(root["body"])
            if fingerprint is None:
                continue
            at = [
                c
                for c in comments
                if (c["path"], c["position"]) == (root["path"], root["position"])
            ]
            later = [c for c in at if c["id"] > root["id"]]
            end = next(
                (i for i, c in enumerate(later) if finding_fingerprint(c["body"])), len(later)
            )
            replies = tuple(c["body"] for c in later[:end])
            out.append(
                Posted(
                    f"{root['id']}:{root['position']}",
                    fingerprint,
                    root["resolver"] is not None,
                    replies,
                )
            )
        return out

    def summaries(self) -> list[str]:
        notes = self.fake.pull(PROJECT, NUMBER).notes
        return [n["body"] for n in notes if summary_state(n["body"]) is not None]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(PROJECT, NUMBER, int(thread_id.split(":")[0]), text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_resolves(PROJECT, NUMBER, int(thread_id.split(":")[0]), "bob")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_unresolves(PROJECT, NUMBER, int(thread_id.split(":")[0]))

    def token(self) -> str:
        return fake_gitea.TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        assert self.event is not None
        return {
            "GITHUB_ACTIONS": "true",
            "GITEA_ACTIONS": "true",
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_REPOSITORY": PROJECT,
            "GITHUB_SERVER_URL": self.fake.web,
            "GITHUB_API_URL": self.fake.api_url,
            "GITEA_TOKEN": token or fake_gitea.TOKEN,
        }
