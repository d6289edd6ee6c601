"""The Azure DevOps side of a pull request's life (`scenario.py`'s `Side`): the fake collection,
Azure Pipelines' variables, and what people do in the web UI (a reply, a thread set to won't
fix)."""

from __future__ import annotations

from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.gitutil import GitRepo
from tests.publish.fake_azure_devops import TOKEN, FakeAzureDevOps
from tests.publish.scenario import NUMBER, PROJECT, Posted

_KINDS = {"A": "add", "M": "edit", "D": "delete", "R": "rename", "C": "add", "T": "edit"}
OPEN = ("active", "pending")


def changed(repo: GitRepo, base: str, head: str) -> dict[str, str]:
    """The request's changed files as its iteration lists them: path -> changeType."""
    out: dict[str, str] = {}
    for line in repo.git("diff", "--name-status", f"{base}...{head}").splitlines():
        status, *paths = line.split("\t")
        out[paths[-1]] = _KINDS.get(status[:1], "edit")
    return out


class AzureDevOpsSide:
    name = "azure"

    def __init__(self, fake: FakeAzureDevOps) -> None:
        self.fake = fake
        self.head = ""
        self.project, self.repo = PROJECT.split("/")

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        self.head = head
        self.fake.add_pull_request(
            self.project, self.repo, NUMBER, head=head, base=base, changed=changed(repo, base, head)
        )

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        self.head = head
        self.fake.push(NUMBER, head, base, changed(repo, base, head))

    def posted(self) -> list[Posted]:
        out = []
        for thread in self.fake.threads(NUMBER):
            comments = [c for c in thread["comments"] if c["commentType"] != "system"]
            fingerprint = finding_fingerprint(comments[0]["content"]) if comments else None
            if thread.get("threadContext") and fingerprint:
                replies = tuple(c["content"] for c in comments[1:])
                resolved = thread.get("status") not in OPEN
                out.append(Posted(str(thread["id"]), fingerprint, resolved, replies))
        return out

    def summaries(self) -> list[str]:
        return [
            c["content"]
            for t in self.fake.threads(NUMBER)
            if not t.get("threadContext")
            for c in t["comments"]
            if summary_state(c["content"]) is not None
        ]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(thread_id, text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_sets_status(thread_id, "wontFix")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_sets_status(thread_id, "active")  # "Active" in the web view

    def token(self) -> str:
        return TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        return {
            "TF_BUILD": "True",
            "SYSTEM_COLLECTIONURI": self.fake.url + "/",
            "SYSTEM_TEAMPROJECT": self.project,
            "BUILD_REPOSITORY_NAME": self.repo,
            "SYSTEM_PULLREQUEST_PULLREQUESTID": str(NUMBER),
            "SYSTEM_PULLREQUEST_SOURCECOMMITID": self.head,
            "SYSTEM_ACCESSTOKEN": token or TOKEN,
        }
