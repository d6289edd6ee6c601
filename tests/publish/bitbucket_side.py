"""The fake Bitbucket Cloud as the pull request's life (`scenario.py`) drives it: Bitbucket
Pipelines' variables for the CLI, the pull request's real diff, its threads read back with
their markers as reviewflow reads them."""

from __future__ import annotations

from reviewflow.publish.bitbucket.markup import from_bitbucket
from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.gitutil import GitRepo
from tests.publish.fake_bitbucket import TOKEN, FakeBitbucket
from tests.publish.scenario import NUMBER, PROJECT, Posted


class BitbucketSide:
    name = "bitbucket"

    def __init__(self, fake: FakeBitbucket) -> None:
        self.fake = fake
        self.base = self.head = ""

    @property
    def api_url(self) -> str:
        return self.fake.api_url

    @property
    def cli_args(self) -> tuple[str, ...]:
        """Pipelines names no API URL: the CLI is told the fake's."""
        return ("--api-url", self.fake.api_url)

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        self.base, self.head = base, head
        diff = repo.git("diff", "--no-color", f"{base}...{head}")
        self.fake.add_pull_request(
            PROJECT, NUMBER, source_hash=head, destination_hash=base, diff=diff
        )

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        self.base, self.head = base, head
        self.fake.push(
            PROJECT, NUMBER, head, base, repo.git("diff", "--no-color", f"{base}...{head}")
        )

    def posted(self) -> list[Posted]:
        comments = self.fake.comments(PROJECT, NUMBER)
        out = []
        for root in (c for c in comments if c.get("inline") and not c.get("parent")):
            fingerprint = finding_fingerprint(from_bitbucket(root["content"]["raw"]))
            if fingerprint:
                replies = tuple(
                    from_bitbucket(c["content"]["raw"])
                    for c in comments
                    if (c.get("parent") or {}).get("id") == root["id"]
                )
                out.append(
                    Posted(str(root["id"]), fingerprint, bool(root.get("resolution")), replies)
                )
        return out

    def summaries(self) -> list[str]:
        bodies = [
            from_bitbucket(c["content"]["raw"])
            for c in self.fake.comments(PROJECT, NUMBER)
            if not c.get("inline")
        ]
        return [body for body in bodies if summary_state(body) is not None]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(thread_id, text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_resolves(thread_id, "bob")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_reopens(thread_id)

    def token(self) -> str:
        return TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        return {
            "CI": "true",
            "BITBUCKET_BUILD_NUMBER": "12",
            "BITBUCKET_REPO_FULL_NAME": PROJECT,
            "BITBUCKET_PR_ID": str(NUMBER),
            "BITBUCKET_COMMIT": self.head,
            "BITBUCKET_PR_DESTINATION_COMMIT": self.base[:12],  # as Pipelines often gives it
            "BITBUCKET_TOKEN": token or TOKEN,
        }
