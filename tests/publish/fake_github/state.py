"""The fake GitHub's state: users, pull requests, reviews, review threads, issue comments.

Writes check what GitHub checks and raise `ApiError` (REST) or `FieldError` (a GraphQL field)
with GitHub's own status and message. Every method is called under the server's lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DOCS = "https://docs.github.com/rest"


class ApiError(Exception):
    """A REST error answer: status, GitHub's JSON body, extra headers."""

    def __init__(
        self, status: int, message: str, errors: list[Any] | None = None, **headers: str
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {
            "message": message,
            "documentation_url": DOCS,
            "status": str(status),
        }
        if errors is not None:
            self.body["errors"] = errors
        self.headers = {k.replace("_", "-"): v for k, v in headers.items()}


class FieldError(Exception):
    """A GraphQL error on one field: `type` is GitHub's (NOT_FOUND, FORBIDDEN, ...)."""

    def __init__(self, type_: str, message: str) -> None:
        super().__init__(message)
        self.type = type_


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class User:
    login: str
    id: int
    read_only: bool = False
    bot: bool = False

    @property
    def graphql_login(self) -> str:
        """GraphQL names a bot without REST's `[bot]` suffix."""
        return self.login.removesuffix("[bot]") if self.bot else self.login


@dataclass
class Pull:
    repo: str
    number: int
    id: int
    author: User
    base_sha: str
    head_sha: str
    base_ref: str
    head_ref: str
    commentable: dict[str, dict[str, frozenset[int]]]
    """Per head SHA pushed, per path: the new-side lines inside the diff's hunks."""
    created_at: str = field(default_factory=now)


@dataclass
class ReviewComment:
    id: int
    node_id: str
    review_id: int | None
    thread_id: str
    author: User
    body: str
    commit_id: str
    in_reply_to: int | None = None
    created_at: str = field(default_factory=now)


@dataclass
class Review:
    id: int
    node_id: str
    repo: str
    number: int
    author: User
    body: str
    state: str
    commit_id: str
    comment_ids: list[int] = field(default_factory=list)
    submitted_at: str = field(default_factory=now)


@dataclass
class ReviewThread:
    id: str
    repo: str
    number: int
    path: str
    line: int
    start_line: int | None
    comments: list[ReviewComment] = field(default_factory=list)
    resolved_by: User | None = None
    resolved: bool = False


@dataclass
class IssueComment:
    id: int
    node_id: str
    repo: str
    number: int
    author: User
    body: str
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


_REVIEW_STATES = {
    "COMMENT": "COMMENTED",
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
}


class Store:
    """Everything the fake GitHub holds."""

    def __init__(self) -> None:
        self._ids = itertools.count(1_000_001)
        self.users: dict[str, User] = {}
        self.tokens: dict[str, User] = {}
        self.pulls: dict[tuple[str, int], Pull] = {}
        self.reviews: list[Review] = []
        self.threads: dict[str, ReviewThread] = {}
        self.comments: dict[int, ReviewComment] = {}
        self.issue_comments: dict[int, IssueComment] = {}

    def next_id(self) -> int:
        return next(self._ids)

    def user(self, login: str, *, bot: bool | None = None) -> User:
        if login not in self.users:
            is_bot = login.endswith("[bot]") if bot is None else bot
            self.users[login] = User(login, self.next_id(), bot=is_bot)
        return self.users[login]

    def pull(self, repo: str, number: int) -> Pull:
        pull = self.pulls.get((repo, number))
        if pull is None:
            raise ApiError(404, "Not Found")
        return pull

    def thread(self, node_id: str) -> ReviewThread:
        thread = self.threads.get(node_id)
        if thread is None:
            raise FieldError(
                "NOT_FOUND", f"Could not resolve to a node with the global id of '{node_id}'"
            )
        return thread

    def pull_threads(self, repo: str, number: int) -> list[ReviewThread]:
        return [t for t in self.threads.values() if (t.repo, t.number) == (repo, number)]

    def pull_issue_comments(self, repo: str, number: int) -> list[IssueComment]:
        return [c for c in self.issue_comments.values() if (c.repo, c.number) == (repo, number)]

    def create_review(self, pull: Pull, author: User, data: Mapping[str, Any]) -> Review:
        """A review and its comments, each a new thread; nothing at all when one is refused."""
        commit_id = str(data.get("commit_id") or pull.head_sha)
        lines = pull.commentable.get(commit_id)
        if lines is None:
            raise ApiError(
                422, "Unprocessable Entity", ["commit_id is not part of the pull request"]
            )
        items = list(data.get("comments") or [])
        for item in items:
            _check_position(item, lines)
        event = data.get("event")
        review = Review(
            id=self.next_id(),
            node_id=f"PRR_fake{len(self.reviews) + 1}",
            repo=pull.repo,
            number=pull.number,
            author=author,
            body=str(data.get("body") or ""),
            state=_REVIEW_STATES.get(str(event), "PENDING"),
            commit_id=commit_id,
        )
        self.reviews.append(review)
        for item in items:
            thread = self.new_thread(pull, item["path"], item["line"], item.get("start_line"))
            comment = self.add_comment(thread, author, item["body"], commit_id, review.id)
            review.comment_ids.append(comment.id)
        return review

    def new_thread(self, pull: Pull, path: str, line: int, start_line: int | None) -> ReviewThread:
        thread = ReviewThread(
            f"PRRT_fake{len(self.threads) + 1}", pull.repo, pull.number, path, line, start_line
        )
        self.threads[thread.id] = thread
        return thread

    def add_comment(
        self,
        thread: ReviewThread,
        author: User,
        body: str,
        commit_id: str,
        review_id: int | None = None,
    ) -> ReviewComment:
        if not body:
            raise ApiError(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "PullRequestReviewComment",
                        "code": "missing_field",
                        "field": "body",
                    }
                ],
            )
        first = thread.comments[0].id if thread.comments else None
        comment = ReviewComment(
            id=self.next_id(),
            node_id=f"PRRC_fake{len(self.comments) + 1}",
            review_id=review_id if review_id is not None else self.next_id(),
            thread_id=thread.id,
            author=author,
            body=body,
            commit_id=commit_id,
            in_reply_to=first,
        )
        thread.comments.append(comment)
        self.comments[comment.id] = comment
        return comment

    def reply(self, thread: ReviewThread, author: User, body: str) -> ReviewComment:
        head = self.pull(thread.repo, thread.number).head_sha
        return self.add_comment(thread, author, body, head)

    def resolve(self, thread: ReviewThread, by: User) -> None:
        thread.resolved, thread.resolved_by = True, by

    def add_issue_comment(self, pull: Pull, author: User, body: str) -> IssueComment:
        if not body:
            raise ApiError(
                422,
                "Validation Failed",
                [{"resource": "IssueComment", "code": "missing_field", "field": "body"}],
            )
        comment = IssueComment(
            self.next_id(),
            f"IC_fake{len(self.issue_comments) + 1}",
            pull.repo,
            pull.number,
            author,
            body,
        )
        self.issue_comments[comment.id] = comment
        return comment

    def edit_issue_comment(self, repo: str, comment_id: int, body: str) -> IssueComment:
        comment = self.issue_comments.get(comment_id)
        if comment is None or comment.repo != repo:
            raise ApiError(404, "Not Found")
        comment.body, comment.updated_at = body, now()
        return comment


def _check_position(item: Mapping[str, Any], commentable: Mapping[str, frozenset[int]]) -> None:
    """What GitHub answers 422 to: a path or line outside the diff, a bad start_line."""
    if not item.get("body"):
        raise ApiError(422, "Unprocessable Entity", ["Body can't be blank"])
    if "line" not in item or "position" in item:
        raise ApiError(422, "Unprocessable Entity", ["The fake takes line-based comments only"])
    lines = commentable.get(str(item.get("path")))
    if lines is None:
        raise ApiError(422, "Unprocessable Entity", ["Path could not be resolved"])
    if item.get("side", "RIGHT") != "RIGHT":
        raise ApiError(422, "Unprocessable Entity", ["The fake models new-side lines only"])
    line, start = int(item["line"]), item.get("start_line")
    if line not in lines:
        raise ApiError(422, "Unprocessable Entity", ["Line could not be resolved"])
    if start is None:
        return
    if item.get("start_side", "RIGHT") != "RIGHT":
        raise ApiError(422, "Unprocessable Entity", ["The fake models new-side lines only"])
    if int(start) >= line:
        raise ApiError(
            422,
            "Unprocessable Entity",
            ["pull_request_review_thread.start_line must precede the end line"],
        )
    if any(n not in lines for n in range(int(start), line)):
        raise ApiError(
            422,
            "Unprocessable Entity",
            ["pull_request_review_thread.start_line must be part of the same hunk as the line."],
        )


def frozen_lines(commentable: Mapping[str, Iterable[int]]) -> dict[str, frozenset[int]]:
    return {path: frozenset(lines) for path, lines in commentable.items()}
