"""The fake Bitbucket Data Center as the pull request's life (`scenario.py`) drives it: no CI
the tool detects, so the CLI is told the platform, server, repository and pull request by
flags; the pull request follows the source branch's commits with the real diff's added and
context lines; its comments read back with their markers as reviewflow reads them."""

from __future__ import annotations

from reviewflow.git.parse import parse_unified_diff
from reviewflow.publish.bitbucket.dc_text import from_dc
from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.gitutil import GitRepo
from tests.publish.fake_bitbucket_dc import BOT_TOKEN, FakeBitbucketDC
from tests.publish.fake_bitbucket_dc_state import Json
from tests.publish.scenario import NUMBER, PROJECT, Posted

Lines = dict[str, set[int]]


def diff_lines(repo: GitRepo, base: str, head: str) -> tuple[Lines, Lines]:
    """The new side of the request's effective diff: its added lines and its context lines,
    by path (what Bitbucket Data Center's diff answers as ADDED and CONTEXT segments)."""
    diff = repo.git("diff", "--no-color", f"{base}...{head}")
    added: Lines = {}
    context: Lines = {}
    for item in parse_unified_diff(diff):
        for hunk in item.hunks:
            for line in hunk.lines:
                if line.new_no is None:
                    continue
                into = added if line.kind == "add" else context
                into.setdefault(item.path, set()).add(line.new_no)
    return added, context


class BitbucketDCSide:
    name = "bitbucket"  # one platform to reviewflow: Data Center by its API URL

    def __init__(self, fake: FakeBitbucketDC) -> None:
        self.fake = fake

    @property
    def api_url(self) -> str:
        return self.fake.url

    @property
    def cli_args(self) -> tuple[str, ...]:
        """No CI names the request: the flags do (after `--publish auto`, so they win)."""
        return (
            *("--publish", "bitbucket", "--api-url", self.fake.url),
            *("--platform-repo", PROJECT, "--pull-request", str(NUMBER)),
        )

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        added, context = diff_lines(repo, base, head)
        self.fake.add_pull_request(
            PROJECT, NUMBER, head_sha=head, target_sha=base, commentable=added, context=context
        )

    def push(self, repo: GitRepo, base: str, head: str) -> None:
        """A push to (or a force-push of) the source branch: its new head and diff."""
        added, context = diff_lines(repo, base, head)
        self.fake.push(PROJECT, NUMBER, head, added, context)

    def posted(self) -> list[Posted]:
        out = []
        for root in self.fake.roots(PROJECT, NUMBER):
            fingerprint = finding_fingerprint(from_dc(root["text"]))
            if "anchor" in root and fingerprint:
                replies = tuple(from_dc(c["text"]) for c in self._replies(root))
                out.append(Posted(str(root["id"]), fingerprint, root["threadResolved"], replies))
        return out

    def _replies(self, root: Json) -> list[Json]:
        """Every reply under `root`, oldest first."""
        with self.fake.lock:
            comments = self.fake.pull_request(PROJECT, NUMBER).comments
            out: list[Json] = []
            stack = list(root["reply_ids"])
            while stack:
                comment = comments[stack.pop()]
                out.append(dict(comment))
                stack.extend(comment["reply_ids"])
        return sorted(out, key=lambda c: int(c["id"]))

    def summaries(self) -> list[str]:
        bodies = [from_dc(c["text"]) for c in self.fake.roots(PROJECT, NUMBER) if "anchor" not in c]
        return [body for body in bodies if summary_state(body) is not None]

    def dismiss(self, thread_id: str, text: str) -> None:
        self.fake.person_replies(PROJECT, NUMBER, thread_id, text, "alice")

    def resolve(self, thread_id: str) -> None:
        self.fake.person_resolves(PROJECT, NUMBER, thread_id, "bob")

    def reopen(self, thread_id: str) -> None:
        self.fake.person_reopens(PROJECT, NUMBER, thread_id, "bob")

    def token(self) -> str:
        return BOT_TOKEN

    def env(self, token: str | None = None) -> dict[str, str]:
        return {"REVIEWFLOW_BITBUCKET_TOKEN": token or BOT_TOKEN}
