"""A stateful fake GitHub on 127.0.0.1: the REST routes and GraphQL operations publishing uses.

    with FakeGitHub() as gh:
        gh.add_pull(7, commentable={"app.py": range(1, 40)})
        client = GitHubClient(gh.ref(7), TOKEN)
        client.post(client.read().info, comments)
        assert len(gh.threads(7)) == len(comments)

Answers have GitHub's shapes (githubkit's models parse them) and its refusals: 401 for an
unknown token, 404 for an unknown repository or pull request, 422 for a review comment outside
the diff's hunks, 403 for a write with a read-only token. `fail_next` and its shorthands script
faults (secondary rate limit, 429, 5xx). `prefix="/api/v3"` serves as GitHub Enterprise Server
does (GraphQL then at `/api/graphql`). Every request is recorded (`requests`, `calls`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_github.server import Api, Fault, Handler, RecordedRequest
from tests.publish.fake_github.shapes import Urls
from tests.publish.fake_github.state import Pull, ReviewThread, frozen_lines
from tests.publish.fake_http import LoopbackServer

__all__ = [
    "BOT",
    "REPO",
    "TOKEN",
    "FakeGitHub",
    "Fault",
    "RecordedRequest",
    "ThreadView",
]

REPO = "octo-org/demo"
TOKEN = "ghs_fakeGitHubToken4Tests0123456789abcdef"
"""Maps to `BOT`, as GitHub Actions' GITHUB_TOKEN maps to github-actions[bot]."""
BOT = "github-actions[bot]"
BASE_SHA = "b" * 40
HEAD_SHA = "c" * 40


@dataclass(frozen=True)
class CommentView:
    id: int
    body: str
    author: str  # REST's login (a bot's with `[bot]`)


@dataclass(frozen=True)
class ThreadView:
    """A review thread as the test sees it."""

    id: str
    path: str
    line: int
    start_line: int | None
    resolved: bool
    resolved_by: str
    comments: tuple[CommentView, ...]


class FakeGitHub(LoopbackServer):
    """The fake on a free port of 127.0.0.1; use as a context manager."""

    def __init__(self, prefix: str = "", api_versions: tuple[str, ...] | None = None) -> None:
        self._api = Api(prefix.rstrip("/"), api_versions)
        self._listen(Handler, self._api)
        self._api.urls = Urls(api=self.url + self._api.prefix, web=self.url)
        self.add_token(TOKEN, BOT)

    @property
    def url(self) -> str:
        return self.origin

    @property
    def api_url(self) -> str:
        """The REST base to configure (`RequestRef.api_url`)."""
        return self._api.urls.api

    def ref(self, number: int, repo: str = REPO) -> RequestRef:
        return RequestRef(platform="github", repo=repo, number=number, api_url=self.api_url)

    # state, as people and pushes change it
    def add_token(self, token: str, login: str, *, read_only: bool = False) -> None:
        """`token` authenticates as `login` (a login ending in `[bot]` is a bot)."""
        with self._api.lock:
            user = self._api.store.user(login)
            if read_only:
                user = replace(user, read_only=True)
            self._api.store.tokens[token] = user

    def add_pull(
        self,
        number: int,
        *,
        commentable: Mapping[str, Iterable[int]],
        repo: str = REPO,
        base_sha: str = BASE_SHA,
        head_sha: str = HEAD_SHA,
        base_ref: str = "main",
        head_ref: str = "feature",
        author: str = "octocat",
    ) -> None:
        """A pull request whose diff has new-side lines `commentable[path]` inside its hunks."""
        with self._api.lock:
            store = self._api.store
            store.pulls[(repo, number)] = Pull(
                repo, number, store.next_id(), store.user(author), base_sha, head_sha,
                base_ref, head_ref, {head_sha: frozen_lines(commentable)},
            )  # fmt: skip

    def push(
        self, number: int, head_sha: str, commentable: Mapping[str, Iterable[int]], repo: str = REPO
    ) -> None:
        """A push: the new head and its diff's commentable lines (threads stay as they are)."""
        with self._api.lock:
            pull = self._api.store.pull(repo, number)
            pull.head_sha = head_sha
            pull.commentable[head_sha] = frozen_lines(commentable)

    def person_resolves(self, thread_id: str, login: str) -> None:
        with self._api.lock:
            store = self._api.store
            store.resolve(store.thread(thread_id), store.user(login))

    def person_unresolves(self, thread_id: str) -> None:
        """`unresolveReviewThread` in the web view: open again, no one resolved it."""
        with self._api.lock:
            thread = self._api.store.thread(thread_id)
            thread.resolved, thread.resolved_by = False, None

    def person_replies(self, thread_id: str, body: str, login: str) -> None:
        with self._api.lock:
            store = self._api.store
            store.reply(store.thread(thread_id), store.user(login), body)

    def add_issue_comment(self, number: int, body: str, login: str, repo: str = REPO) -> int:
        """A person's top-level comment on the pull request; its ID."""
        with self._api.lock:
            store = self._api.store
            return store.add_issue_comment(store.pull(repo, number), store.user(login), body).id

    # faults
    def fail_next(
        self,
        status: int,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        count: int = 1,
        kind: str = "",
        after: int = 0,
    ) -> None:
        """The next `count` requests whose kind starts with `kind` get `status` and `message`,
        once `after` of them went through."""
        body = {"message": message, "documentation_url": "https://docs.github.com/rest"}
        with self._api.lock:
            self._api.faults.append(Fault(status, body, dict(headers or {}), count, kind, after))

    def secondary_rate_limit(self, count: int = 1, retry_after: int = 1, kind: str = "") -> None:
        message = "You have exceeded a secondary rate limit. Please wait a few minutes."
        self.fail_next(
            403, message, headers={"retry-after": str(retry_after)}, count=count, kind=kind
        )

    def primary_rate_limit(self, reset_in: int = 30, count: int = 1, kind: str = "") -> None:
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(time.time()) + reset_in),
        }
        message = "API rate limit exceeded for installation ID 1."
        self.fail_next(403, message, headers=headers, count=count, kind=kind)

    def too_many_requests(self, count: int = 1, retry_after: int = 1, kind: str = "") -> None:
        self.fail_next(
            429,
            "Too many requests",
            headers={"retry-after": str(retry_after)},
            count=count,
            kind=kind,
        )

    def server_error(self, status: int = 502, count: int = 1, kind: str = "") -> None:
        self.fail_next(status, "Server Error", count=count, kind=kind)

    def graphql_error(self, type_: str, message: str, count: int = 1) -> None:
        """The next GraphQL requests answer 200 with one error of `type_` (e.g. RATE_LIMITED)."""
        body: dict[str, Any] = {"errors": [{"type": type_, "message": message}]}
        with self._api.lock:
            self._api.faults.append(Fault(200, body, {}, count, "graphql"))

    # what happened
    def threads(self, number: int, repo: str = REPO) -> list[ThreadView]:
        with self._api.lock:
            return [_view(t) for t in self._api.store.pull_threads(repo, number)]

    def issue_comments(self, number: int, repo: str = REPO) -> list[CommentView]:
        with self._api.lock:
            comments = self._api.store.pull_issue_comments(repo, number)
            return [CommentView(c.id, c.body, c.author.login) for c in comments]

    def reviews(self, number: int, repo: str = REPO) -> list[tuple[int, str, str, int]]:
        """(id, state, commit_id, comment count) of each review, oldest first."""
        with self._api.lock:
            return [
                (r.id, r.state, r.commit_id, len(r.comment_ids))
                for r in self._api.store.reviews
                if (r.repo, r.number) == (repo, number)
            ]

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._api.lock:
            return list(self._api.records)

    @property
    def calls(self) -> Counter[str]:
        """Requests per kind: a REST route's (`pulls.create_review`), or `graphql.` and the
        document's root fields (`graphql.repository`, `graphql.resolveReviewThread`)."""
        with self._api.lock:
            return Counter(self._api.counts)


def _view(thread: ReviewThread) -> ThreadView:
    by = thread.resolved_by.login if thread.resolved_by else ""
    comments = tuple(CommentView(c.id, c.body, c.author.login) for c in thread.comments)
    return ThreadView(
        thread.id, thread.path, thread.line, thread.start_line, thread.resolved, by, comments
    )
