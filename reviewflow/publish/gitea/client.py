"""Gitea's and Forgejo's side of publishing: `GiteaClient`, a `PlatformClient` on their REST API
v1 (`api.py`: why no client library, the models, the errors).

- **Threads.** Gitea's review comments carry no `in_reply_to`: a conversation is the code
  comments on one path and line (`position`), across reviews, as its Files view shows them (a
  reply posted in the UI joins the first comment's review at that line). Each comment holding a
  finding marker starts a thread of its own, so two findings on one line stay two; the other
  comments at that line are replies to the latest thread started before them. A thread is
  resolved when its first comment has a `resolver`, or when reviewflow's latest resolution
  reply stands for it: Forgejo and Gitea before 1.26 have no resolve endpoint. A reply posted
  through the replies endpoint (Gitea 1.27+, which resolves too) says so in a hidden line,
  `RESOLVED_ON_SERVER`: there the `resolver` alone counts, so a conversation a person
  unresolves is open again at once (before 1.27 a reply stands, unresolved or not).
- **Posting.** One review (event `COMMENT`, `commit_id` the head) per batch of at most 50
  comments, each `new_position` = the finding's last line (Gitea comments are single-line: a
  range is named in the body). Gitea does not check that a line is in the diff (it stores a
  comment without context, off the Files view), so the request's diff is read first and a
  comment whose line is not a new-side line of it is skipped, as GitHub and GitLab refuse
  those. A batch refused as a whole (HTTP 422) is posted again one comment a review.
- **Resolving.** The reply goes through `pulls/{index}/comments/{id}/replies` (Gitea 1.27+);
  where that endpoint is missing (404/405) it is a one-comment review on the same line, which
  joins the conversation. Then `pulls/comments/{id}/resolve` (Gitea 1.26+; skipped where
  missing).
- **Markdown.** Gitea and Forgejo render with goldmark and sanitize the HTML: an HTML comment
  is dropped from the page and kept in the body the API returns, so the markers need no
  translation; there is no suggestion fence.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from reviewflow.errors import PublishSetupError
from reviewflow.git.parse import parse_unified_diff
from reviewflow.publish.gitea.api import (
    GiteaApi,
    IssueComment,
    Pull,
    Review,
    ReviewComment,
    login,
)
from reviewflow.pullrequest.markers import finding_fingerprint, is_resolution
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

RESOLVED_ON_SERVER = "<!-- reviewflow:resolved-on-server -->"
"""In a resolution reply: this server resolves conversations, the reply does not stand for it."""
BATCH = 50
"""Comments per review: one refused review costs the whole batch."""
MISSING = (404, 405)
"""How a Gitea or Forgejo without an endpoint answers it."""


@dataclass
class _Conversation:
    root: ReviewComment
    replies: list[ReviewComment] = field(default_factory=list)


class GiteaClient:
    """A pull request on Gitea or Forgejo (`ref.repo` `OWNER/NAME`, `ref.api_url` `…/api/v1`)."""

    def __init__(self, ref: RequestRef, token: str, timeout: float = 30.0) -> None:
        self._ref = ref
        owner, _, name = ref.repo.partition("/")
        if not owner or not name or "/" in name:
            raise PublishSetupError(f"a Gitea repository is OWNER/NAME, not {ref.repo!r}")
        if not token or not token.isascii() or not token.isprintable() or " " in token:
            raise PublishSetupError("the Gitea token is empty or holds characters no token has")
        self._repo = f"/repos/{owner}/{name}"
        self._pull = f"{self._repo}/pulls/{ref.number}"
        self._token = token
        self._timeout = timeout
        self.calls = 0

    def read(self) -> RequestState:
        """The pull request, its review conversations and its issue comments."""
        with self._api() as api:
            action = "reading the pull request"
            pull = api.parsed(Pull, api.call("GET", self._pull, action, reading=True), action)
            comments = self._review_comments(api)
            notes = self._notes(api)
        info = RequestInfo(
            base_sha=pull.base.sha,
            head_sha=pull.head.sha,
            start_sha=pull.base.sha,
            web_url=pull.html_url,
            base_ref=pull.base.ref,
            head_ref=pull.head.ref,
        )
        return RequestState(info=info, threads=threads_of(comments), notes=notes)

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One review per batch of the comments on the diff's lines; the fingerprints skipped
        (outside the diff, or refused alone)."""
        with self._api() as api:
            lines = self._diff_lines(api)
            on_diff = [c for c in comments if c.end_line in lines.get(c.path, set())]
            skipped = [c.fingerprint for c in comments if c not in on_diff]
            for start in range(0, len(on_diff), BATCH):
                batch = on_diff[start : start + BATCH]
                if self._review(api, info.head_sha, batch):
                    continue
                if len(batch) == 1:
                    skipped.append(batch[0].fingerprint)
                    continue
                skipped += [
                    c.fingerprint for c in batch if not self._review(api, info.head_sha, [c])
                ]
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in the conversation, then resolve it (where the server can)."""
        root, line = _thread_key(thread.id)
        with self._api() as api:
            if reply.strip():
                self._reply(api, thread.path, root, line, reply)
            api.call(
                "POST",
                f"{self._repo}/pulls/comments/{root}/resolve",
                "resolving a review conversation",
                accept=MISSING,
            )

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the issue comment `note` to `body`, or create one when None."""
        action = "writing the summary comment"
        with self._api() as api:
            if note is None:
                path = f"{self._repo}/issues/{self._ref.number}/comments"
                api.call("POST", path, action, json={"body": body})
            else:
                if not note.id.isdigit():
                    raise PublishSetupError(f"a Gitea comment ID is a number, not {note.id!r}")
                path = f"{self._repo}/issues/comments/{note.id}"
                api.call("PATCH", path, action, json={"body": body})

    @contextmanager
    def _api(self) -> Iterator[GiteaApi]:
        """One connection pool for an operation's requests, its calls counted."""
        api = GiteaApi(self._ref, self._token, self._timeout)
        try:
            yield api
        finally:
            self.calls += api.calls
            api.close()

    def _review_comments(self, api: GiteaApi) -> list[ReviewComment]:
        action = "reading its reviews"
        reviews = list(api.pages(Review, f"{self._pull}/reviews", action))
        comments: list[ReviewComment] = []
        for review in reviews:
            if review.comments_count <= 0:
                continue  # a review without line comments (an approval, a request for review)
            action = "reading a review's comments"
            path = f"{self._pull}/reviews/{review.id}/comments"
            response = api.call("GET", path, action, reading=True)
            comments += api.parsed_list(ReviewComment, response, action)
        return comments

    def _notes(self, api: GiteaApi) -> tuple[SummaryNote, ...]:
        action = "reading its comments"
        path = f"{self._repo}/issues/{self._ref.number}/comments"
        listed = api.parsed_list(IssueComment, api.call("GET", path, action, reading=True), action)
        return tuple(SummaryNote(id=str(c.id), body=c.body) for c in listed)

    def _diff_lines(self, api: GiteaApi) -> dict[str, set[int]]:
        """The new-side lines of the request's diff (its hunks' ranges), by path."""
        response = api.call("GET", f"{self._pull}.diff", "reading its diff", reading=True)
        lines: dict[str, set[int]] = {}
        for item in parse_unified_diff(response.text):
            numbers = lines.setdefault(item.path, set())
            for hunk in item.hunks:
                numbers.update(range(hunk.new_start, hunk.new_start + hunk.new_count))
        return lines

    def _review(self, api: GiteaApi, head: str, batch: Sequence[NewComment]) -> bool:
        """Post `batch` as one review; False when Gitea refuses it (HTTP 422)."""
        payload = {
            "event": "COMMENT",
            "commit_id": head,
            "body": f"reviewflow: {len(batch)} comment(s) on {head[:12]}",
            "comments": [
                {"path": c.path, "body": _ranged(c), "new_position": c.end_line} for c in batch
            ],
        }
        response = api.call(
            "POST", f"{self._pull}/reviews", "posting a review", json=payload, accept=(422,)
        )
        return response.status_code != 422

    def _reply(self, api: GiteaApi, path: str, root: int, line: int, body: str) -> None:
        """Reply in the conversation; a resolution reply through the replies endpoint (whose
        server resolves conversations) marked `RESOLVED_ON_SERVER`."""
        marked = f"{body}\n\n{RESOLVED_ON_SERVER}" if is_resolution(body) else body
        replied = api.call(
            "POST",
            f"{self._pull}/comments/{root}/replies",
            "replying in a review conversation",
            json={"body": marked},
            accept=MISSING,
        )
        if replied.status_code in MISSING:  # before Gitea 1.27, and Forgejo
            payload = {
                "event": "COMMENT",
                "body": "",
                "comments": [{"path": path, "body": body, "new_position": line}],
            }
            api.call(
                "POST", f"{self._pull}/reviews", "replying in a review conversation", json=payload
            )


def _ranged(comment: NewComment) -> str:
    """The body, naming the range when the comment stands for several lines."""
    if comment.start_line >= comment.end_line:
        return comment.body
    return f"{comment.body}\n\n<sub>lines {comment.start_line}–{comment.end_line}</sub>"


def threads_of(comments: Sequence[ReviewComment]) -> tuple[Thread, ...]:
    """Conversations by path and line, a finding's comment starting a thread of its own."""
    started: dict[tuple[str, int, int], _Conversation] = {}
    ordered: list[_Conversation] = []
    for comment in sorted(comments, key=lambda c: c.id):
        key = (comment.path, comment.position, comment.original_position)
        current = started.get(key)
        if current is None or finding_fingerprint(comment.body) is not None:
            current = started[key] = _Conversation(comment)
            ordered.append(current)
        else:
            current.replies.append(comment)
    return tuple(_thread(c) for c in ordered)


def _thread(conversation: _Conversation) -> Thread:
    root = conversation.root
    every = [root, *conversation.replies]
    mine = [c.body for c in conversation.replies if is_resolution(c.body)]
    stands = bool(mine) and RESOLVED_ON_SERVER not in mine[-1]
    resolver = login(root.resolver)
    return Thread(
        id=f"{root.id}:{root.position}",
        path=root.path,
        resolved=root.resolver is not None or stands,
        resolved_by=resolver,
        comments=tuple(
            PostedComment(id=str(c.id), body=c.body, author=login(c.user)) for c in every
        ),
    )


def _thread_key(thread_id: str) -> tuple[int, int]:
    root, _, line = thread_id.partition(":")
    if not root.isdigit() or not line.isdigit():
        raise PublishSetupError(f"not a Gitea review conversation: {thread_id!r}")
    return int(root), int(line)
