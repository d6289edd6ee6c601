"""The fake GitHub's REST endpoints: the routes publishing uses, with GitHub's pagination."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.publish.fake_github import shapes
from tests.publish.fake_github.shapes import Urls
from tests.publish.fake_github.state import ApiError, Pull, Store, User

Answer = tuple[int, Any, dict[str, str]]


@dataclass(frozen=True)
class Call:
    """One REST request as a handler sees it (path relative to the API base)."""

    store: Store
    user: User
    urls: Urls
    path: str
    query: dict[str, str]
    body: Any
    params: dict[str, str]

    def pull(self) -> Pull:
        return self.store.pull(f"{self.params['owner']}/{self.params['repo']}", self.number)

    @property
    def number(self) -> int:
        return int(self.params["number"])

    def field(self, name: str) -> str:
        value = self.body.get(name) if isinstance(self.body, dict) else None
        if not isinstance(value, str):
            raise ApiError(422, "Invalid request.", [f'"{name}" wasn\'t supplied.'])
        return value


def _get_pull(call: Call) -> Answer:
    pull = call.pull()
    threads = call.store.pull_threads(pull.repo, pull.number)
    review_comments = sum(len(t.comments) for t in threads)
    comments = len(call.store.pull_issue_comments(pull.repo, pull.number))
    return 200, shapes.pull_request(pull, review_comments, comments, call.urls), {}


def _create_review(call: Call) -> Answer:
    if not isinstance(call.body, dict):
        raise ApiError(400, "Problems parsing JSON")
    review = call.store.create_review(call.pull(), call.user, call.body)
    return 200, shapes.review(review, call.urls), {}


def _reply(call: Call) -> Answer:
    pull = call.pull()
    parent = call.store.comments.get(int(call.params["id"]))
    if parent is None or parent.in_reply_to is not None:
        raise ApiError(404, "Not Found")
    thread = call.store.threads[parent.thread_id]
    if (thread.repo, thread.number) != (pull.repo, pull.number):
        raise ApiError(404, "Not Found")
    comment = call.store.reply(thread, call.user, call.field("body"))
    shape = shapes.review_comment(
        comment, thread.path, thread.line, pull.repo, pull.number, call.urls
    )
    return 201, shape, {}


def _list_issue_comments(call: Call) -> Answer:
    pull = call.pull()
    comments = call.store.pull_issue_comments(pull.repo, pull.number)
    page, link = paginate(comments, call.query, f"{call.urls.api}{call.path}")
    payload = [shapes.issue_comment(c, call.urls) for c in page]
    return 200, payload, {"link": link} if link else {}


def _create_issue_comment(call: Call) -> Answer:
    comment = call.store.add_issue_comment(call.pull(), call.user, call.field("body"))
    return 201, shapes.issue_comment(comment, call.urls), {}


def _update_issue_comment(call: Call) -> Answer:
    repo = f"{call.params['owner']}/{call.params['repo']}"
    if not any(r == repo for r, _ in call.store.pulls):
        raise ApiError(404, "Not Found")
    comment = call.store.edit_issue_comment(repo, int(call.params["id"]), call.field("body"))
    return 200, shapes.issue_comment(comment, call.urls), {}


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    kind: str
    handler: Callable[[Call], Answer]

    @property
    def writes(self) -> bool:
        return self.method != "GET"


def _route(method: str, template: str, kind: str, handler: Callable[[Call], Answer]) -> Route:
    regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
    return Route(method, re.compile(f"^{regex}$"), kind, handler)


_REPO = "/repos/{owner}/{repo}"
ROUTES = (
    _route("GET", _REPO + "/pulls/{number}", "pulls.get", _get_pull),
    _route("POST", _REPO + "/pulls/{number}/reviews", "pulls.create_review", _create_review),
    _route(
        "POST",
        _REPO + "/pulls/{number}/comments/{id}/replies",
        "pulls.create_reply_for_review_comment",
        _reply,
    ),
    _route(
        "GET", _REPO + "/issues/{number}/comments", "issues.list_comments", _list_issue_comments
    ),
    _route(
        "POST", _REPO + "/issues/{number}/comments", "issues.create_comment", _create_issue_comment
    ),
    _route(
        "PATCH", _REPO + "/issues/comments/{id}", "issues.update_comment", _update_issue_comment
    ),
)


def find(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    for route in ROUTES:
        match = route.pattern.match(path)
        if match and route.method == method:
            return route, match.groupdict()
    return None


def paginate(items: Sequence[Any], query: dict[str, str], url: str) -> tuple[Sequence[Any], str]:
    """GitHub's `per_page` (default 30, at most 100) and `page`, and the Link header."""
    per_page = min(max(int(query.get("per_page", 30)), 1), 100)
    page = max(int(query.get("page", 1)), 1)
    last = max(math.ceil(len(items) / per_page), 1)
    links = []
    if page < last:
        links += [f'<{url}?per_page={per_page}&page={page + 1}>; rel="next"']
        links += [f'<{url}?per_page={per_page}&page={last}>; rel="last"']
    if page > 1:
        links += [f'<{url}?per_page={per_page}&page={page - 1}>; rel="prev"']
        links += [f'<{url}?per_page={per_page}&page=1>; rel="first"']
    return items[(page - 1) * per_page : page * per_page], ", ".join(links)
