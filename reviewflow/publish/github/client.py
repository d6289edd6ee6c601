"""GitHub's side of publishing: `GitHubClient`, a `PlatformClient` on githubkit (REST + GraphQL).

githubkit's own retries and HTTP cache are off: the publishing task's Prefect retries decide, and
a cached answer must never hide a write. Every failure leaves as a `reviewflow.errors` type with
a one-line message that names the request and never the token (`failures.py`).
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from typing import Any

import httpx
from githubkit import GitHub
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import IssueComment
from githubkit_schemas.latest.types import (
    ReposOwnerRepoPullsPullNumberReviewsPostBodyPropCommentsItemsType as ReviewCommentItem,
)

from reviewflow.errors import PublishSetupError
from reviewflow.publish.github.failures import Action, guarded
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

BATCH = 50
"""Comments per review: GitHub takes more, but one refused position costs the whole batch."""
PAGE = 100
GITHUB_COM_API = "https://api.github.com"
ENTERPRISE_API_VERSION = "2022-11-28"
"""The REST version sent to GitHub Enterprise Server: githubkit's schemas default to the newest
github.com version, which an older Enterprise Server refuses (HTTP 400)."""

THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        nodes {
          id
          isResolved
          resolvedBy { login }
          path
          comments(first: 100) {
            nodes { databaseId body author { login } }
            pageInfo { hasNextPage endCursor }
          }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}
"""

THREAD_COMMENTS_QUERY = """
query($thread: ID!, $cursor: String) {
  node(id: $thread) {
    ... on PullRequestReviewThread {
      comments(first: 100, after: $cursor) {
        nodes { databaseId body author { login } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}
"""
"""A thread's comments after its first 100 (a dismissal reply may be the 150th)."""

REPLY_AND_RESOLVE = """
mutation($thread: ID!, $body: String!) {
  addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: $thread, body: $body}) {
    comment { id }
  }
  resolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}
"""

RESOLVE = """
mutation($thread: ID!) {
  resolveReviewThread(input: {threadId: $thread}) { thread { id isResolved } }
}
"""


class GitHubClient:
    """A pull request on GitHub or GitHub Enterprise Server, read and written with githubkit."""

    def __init__(self, ref: RequestRef, token: str, timeout: float = 30.0) -> None:
        self._ref = ref
        self._owner, self._name = _owner_and_name(ref.repo)
        self._token = _checked_token(token)
        self._lock = threading.Lock()
        self.calls = 0
        self._headers = _version_headers(ref.api_url)
        self._gh = GitHub(
            self._token,
            base_url=ref.api_url,
            timeout=httpx.Timeout(timeout),
            ssl_verify=_tls_context(),
            http_cache=False,
            auto_retry=False,
            event_hooks={"request": [self._count]},
        )

    def read(self) -> RequestState:
        """The pull request, its review threads and its issue comments."""
        with self._session():
            info = self._read_info()
            threads = self._read_threads()
            notes = self._read_notes()
        return RequestState(info=info, threads=threads, notes=notes)

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One review per batch of at most 50 comments; a batch GitHub refuses (HTTP 422) is
        posted again one comment a review. Returns the fingerprints GitHub refused."""
        skipped: list[str] = []
        with self._session():
            for start in range(0, len(comments), BATCH):
                batch = comments[start : start + BATCH]
                if self._review(info, batch):
                    continue
                if len(batch) == 1:
                    skipped.append(batch[0].fingerprint)
                    continue
                skipped += [c.fingerprint for c in batch if not self._review(info, [c])]
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in `thread`, then resolve it: one GraphQL request."""
        query, variables = RESOLVE, {"thread": thread.id}
        if reply.strip():
            query, variables = REPLY_AND_RESOLVE, {"thread": thread.id, "body": reply}
        with self._session(), self._guard(Action.RESOLVE):
            self._gh.graphql.request(query, variables)

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the issue comment `note` to `body`, or create one when None."""
        with self._session(), self._guard(Action.NOTE):
            if note is None:
                self._gh.rest.issues.create_comment(
                    *self._repo, self._ref.number, headers=self._headers, body=body
                )
            else:
                self._gh.rest.issues.update_comment(
                    *self._repo, _int_id(note.id), headers=self._headers, body=body
                )

    @property
    def _repo(self) -> tuple[str, str]:
        return self._owner, self._name

    def _count(self, request: httpx.Request) -> None:
        with self._lock:
            self.calls += 1

    @contextmanager
    def _session(self) -> Iterator[None]:
        """One HTTP connection pool for an operation's requests (githubkit opens one a request
        outside its context)."""
        with self._gh:
            yield

    def _guard(self, action: Action) -> AbstractContextManager[None]:
        return guarded(action, self._ref, self._token)

    def _read_info(self) -> RequestInfo:
        with self._guard(Action.READ_PULL):
            pull = self._gh.rest.pulls.get(
                *self._repo, self._ref.number, headers=self._headers
            ).parsed_data
        return RequestInfo(
            base_sha=pull.base.sha,
            head_sha=pull.head.sha,
            start_sha=pull.base.sha,
            web_url=pull.html_url,
            base_ref=pull.base.ref,
            head_ref=pull.head.ref,
        )

    def _read_threads(self) -> tuple[Thread, ...]:
        variables = {"owner": self._owner, "name": self._name, "number": self._ref.number}
        threads: list[Thread] = []
        with self._guard(Action.READ_THREADS):
            for page in self._gh.graphql.paginate(THREADS_QUERY, variables):
                connection = page["repository"]["pullRequest"]["reviewThreads"]
                threads += [_thread(node, self._rest_of(node)) for node in connection["nodes"]]
        return tuple(threads)

    def _rest_of(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """A thread's comments beyond the page its listing gave, one request a page."""
        info = node["comments"].get("pageInfo") or {}
        if not info.get("hasNextPage"):
            return []
        variables = {"thread": node["id"], "cursor": info.get("endCursor")}
        rest: list[dict[str, Any]] = []
        for page in self._gh.graphql.paginate(THREAD_COMMENTS_QUERY, variables):
            rest += page["node"]["comments"]["nodes"]
        return rest

    def _read_notes(self) -> tuple[SummaryNote, ...]:
        with self._guard(Action.READ_NOTES):
            pages: Iterable[IssueComment] = self._gh.rest.paginate(
                self._gh.rest.issues.list_comments,
                owner=self._owner,
                repo=self._name,
                issue_number=self._ref.number,
                per_page=PAGE,
                headers=self._headers,
            )
            return tuple(SummaryNote(id=str(c.id), body=c.body or "") for c in pages)

    def _review(self, info: RequestInfo, batch: Sequence[NewComment]) -> bool:
        """Post `batch` as one review; False when GitHub refuses a position (HTTP 422)."""
        with self._guard(Action.POST):
            try:
                self._gh.rest.pulls.create_review(
                    *self._repo,
                    self._ref.number,
                    headers=self._headers,
                    commit_id=info.head_sha,
                    body=f"reviewflow: {len(batch)} comment(s) on {info.head_sha[:12]}",
                    event="COMMENT",
                    comments=[_review_comment(c) for c in batch],
                )
            except RequestFailed as exc:
                if exc.response.status_code == 422:
                    return False
                raise
        return True


def _review_comment(comment: NewComment) -> ReviewCommentItem:
    item: ReviewCommentItem = {
        "path": comment.path,
        "body": comment.body,
        "line": comment.end_line,
        "side": "RIGHT",
    }
    if comment.start_line < comment.end_line:
        item["start_line"] = comment.start_line
        item["start_side"] = "RIGHT"
    return item


def _thread(node: dict[str, Any], more: Sequence[dict[str, Any]] = ()) -> Thread:
    comments = tuple(
        PostedComment(
            id="" if c.get("databaseId") is None else str(c["databaseId"]),
            body=c.get("body") or "",
            author=_login(c.get("author")),
        )
        for c in [*node["comments"]["nodes"], *more]
    )
    return Thread(
        id=node["id"],
        path=node.get("path") or "",
        resolved=bool(node["isResolved"]),
        resolved_by=_login(node.get("resolvedBy")),
        comments=comments,
    )


def _login(actor: dict[str, Any] | None) -> str:
    """An actor's login; "" for none (a deleted account, or a bot: `resolvedBy` is a User)."""
    return str((actor or {}).get("login") or "")


def _owner_and_name(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise PublishSetupError(f"a GitHub repository is OWNER/NAME, not {repo!r}")
    return owner, name


def _checked_token(token: str) -> str:
    if not token:
        raise PublishSetupError(
            "no GitHub token: set GITHUB_TOKEN or REVIEWFLOW_GITHUB_TOKEN to a token with "
            "pull-requests: write"
        )
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise PublishSetupError("the GitHub token holds characters no token has (space, newline)")
    return token


def _version_headers(api_url: str) -> dict[str, str]:
    """For Enterprise Server, the REST version every release of it knows."""
    if httpx.URL(api_url).host == httpx.URL(GITHUB_COM_API).host:
        return {}
    return {"X-GitHub-Api-Version": ENTERPRISE_API_VERSION}


def _int_id(note_id: str) -> int:
    if not note_id.isdigit():
        raise PublishSetupError(f"a GitHub issue comment ID is a number, not {note_id!r}")
    return int(note_id)


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per `SSL_CERT_FILE`/`SSL_CERT_DIR` (building one
    loads the CA bundle: ~40 ms, for every githubkit session otherwise)."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # reads the two variables itself
