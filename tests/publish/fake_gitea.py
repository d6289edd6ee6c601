"""A stateful fake Gitea API v1 on 127.0.0.1 (Forgejo too: `forgejo()` takes its missing
endpoints away), whose answers `reviewflow.publish.gitea.api`'s models parse.

    with FakeGitea() as gt:
        gt.add_pull("acme/app", 7, head_sha=HEAD, base_sha=BASE, commentable={"app.py": {3, 4}})
        client = GiteaClient(gt.ref("acme/app", 7), TOKEN)

Serves under `{prefix}/api/v1/repos/:owner/:repo`: `pulls/:n` (GET), `pulls/:n.diff` (GET, text),
`pulls/:n/reviews` (GET paginated, POST), `pulls/:n/reviews/:id/comments` (GET, every comment:
Gitea does not page it; 404 for another's pending review), `pulls/:n/comments/:id/replies`
(POST; before Gitea 1.27 a route it does not have: 404 as any), `pulls/comments/:id/resolve`
(POST, 204; 404 on Forgejo), `issues/:n/comments` (GET, not paged
as in Gitea; POST), `issues/comments/:id` (PATCH). Enforced as Gitea does: 401 without a known
`Authorization: token …`, 403 for a write with a read-only token or an edit of another's
comment, 404 for an unknown repository, pull request, review or comment, 422 for an empty
review. The review listing pages as Gitea's (`ListPullReviews`, Gitea 1.22 to main and
Forgejo): `page` and `limit` (default 30, at most `max_items`, `[api] MAX_RESPONSE_ITEMS`, 50),
`X-Total-Count` counting every review, others' pending ones too, which it leaves out of the
page, and no `Link` header (Gitea calls `SetTotalCountHeader` there, not `SetLinkHeader`).
Scripted failures (`fail`, `rate_limit`) come first; `{token}` in a body is replaced by the
token the request carried.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_gitea_state import ApiError, GiteaState, Json, Pull
from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest, number

TOKEN = "gitea-fake-bot-0c1d2e3f4a5b6c7d"
READ_ONLY_TOKEN = "gitea-fake-fork-9e8d7c6b5a4f"
BOT = "reviewflow-bot"
DEFAULT_LIMIT, MAX_LIMIT = 30, 50
_ROUTES = [
    ("GET", r"pulls/(\d+)", "get_pull"),
    ("GET", r"pulls/(\d+)\.diff", "get_diff"),
    ("GET", r"pulls/(\d+)/reviews", "list_reviews"),
    ("POST", r"pulls/(\d+)/reviews", "create_review"),
    ("GET", r"pulls/(\d+)/reviews/(\d+)/comments", "review_comments"),
    ("POST", r"pulls/(\d+)/comments/(\d+)/replies", "reply"),
    ("POST", r"pulls/comments/(\d+)/resolve", "resolve"),
    ("GET", r"issues/(\d+)/comments", "list_notes"),
    ("POST", r"issues/(\d+)/comments", "create_note"),
    ("PATCH", r"issues/comments/(\d+)", "edit_note"),
]
KINDS = tuple(kind for _, _, kind in _ROUTES)
_NO_ROUTE: Answer = (404, {"message": "404 page not found"}, {})  # a route the server lacks


class FakeGitea(PlatformFake, GiteaState):
    methods = ("GET", "POST", "PATCH")
    json_type = "application/json;charset=utf-8"
    text_type = "text/plain; charset=utf-8"
    empty_type = "text/plain"

    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self._serve_http(prefix)
        self.add_token(TOKEN, BOT)
        self.add_token(READ_ONLY_TOKEN, "fork-bot", write=False)
        self.max_items = MAX_LIMIT  # the server's `[api] MAX_RESPONSE_ITEMS`

    def forgejo(self) -> FakeGitea:
        """As Forgejo (and Gitea before 1.26) answers: no reply, no resolve endpoint."""
        self.replies_endpoint = self.resolve_endpoint = False
        return self

    @property
    def web(self) -> str:
        return self.url

    @property
    def api_url(self) -> str:
        return f"{self.web}/api/v1"

    def ref(self, repo: str, number: int) -> RequestRef:
        return RequestRef(platform="gitea", repo=repo, number=number, api_url=self.api_url)

    def token_of(self, headers: dict[str, str]) -> str:
        auth = headers.get("authorization", "")
        return auth[len("token ") :] if auth.startswith("token ") else ""

    def failure_body(self, status: int) -> Any:
        return {"message": f"HTTP {status}", "url": ""}

    def rate_limit(self, *, kind: str | None = None, retry_after: str | None = "7") -> None:
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        self.fail(429, kind=kind, body={"message": "rate limit exceeded"}, headers=headers)

    def person_replies(self, repo: str, number: int, comment_id: int, body: str, who: str) -> Json:
        with self.lock:
            pull = self.find(*repo.split("/"), number)
            return self.reply(pull, comment_id, who, body)

    def person_resolves(self, repo: str, number: int, comment_id: int, who: str) -> None:
        with self.lock:
            self.set_resolver(self.find(*repo.split("/"), number), comment_id, who)

    def person_unresolves(self, repo: str, number: int, comment_id: int) -> None:
        with self.lock:
            self.set_resolver(self.find(*repo.split("/"), number), comment_id, None)

    def pull(self, repo: str, number: int) -> Pull:
        return self.find(*repo.split("/"), number)

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if request.kind == "unknown":
            return _NO_ROUTE
        who = self.tokens.get(token)
        if who is None:
            return 401, {"message": "user does not exist [uid: 0, name: ]", "url": ""}, {}
        args = request.args
        try:
            pull = (
                self.find(args[0], args[1], int(args[2]))
                if request.kind not in ("resolve", "edit_note")
                else None
            )
            if request.method != "GET" and not who[1]:
                raise ApiError(
                    403,
                    "token does not have at least one of required scope(s): [write:repository]",
                )
            return self._dispatch(request, pull, who[0])
        except ApiError as err:
            return err.status, err.body, {}

    def _dispatch(self, request: RecordedRequest, pull: Pull | None, user: str) -> Answer:
        data, args = (request.body if isinstance(request.body, dict) else {}), request.args
        if pull is None:  # addressed by comment ID alone
            item = int(args[2])
            if request.kind == "edit_note":
                return 200, self.edit_note(args[0], args[1], item, user, str(data.get("body"))), {}
            if not self.resolve_endpoint:
                return _NO_ROUTE
            owner_pulls = [
                p
                for (o, n, _), p in self.pulls.items()
                if (o, n) == (args[0].lower(), args[1].lower())
            ]
            for candidate in owner_pulls:
                if any(c["id"] == item for c in candidate.comments):
                    self.set_resolver(candidate, item, user)
                    return 204, None, {}
            raise ApiError(404, "The target couldn't be found.")
        match request.kind:
            case "get_pull":
                return 200, self.pull_json(pull), {}
            case "get_diff":
                return 200, self.diff_text(pull), {}
            case "list_reviews":
                return self._reviews(pull.reviews, request, user)
            case "create_review":
                return 200, self.create_review(pull, user, data), {}
            case "review_comments":
                review = next((r for r in pull.reviews if r["id"] == int(args[3])), {})
                if review.get("state") == "PENDING" and review["user"]["login"] != user:
                    raise ApiError(404, "The target couldn't be found.")  # prepareSingleReview
                return 200, self.comments_of(pull, int(args[3])), {}
            case "reply":
                if not self.replies_endpoint:
                    return _NO_ROUTE
                return 201, self.reply(pull, int(args[3]), user, str(data.get("body") or "")), {}
            case "list_notes":
                return 200, list(pull.notes), {}
            case _:
                return 201, self.create_note(pull, user, str(data.get("body") or "")), {}

    def _reviews(self, reviews: list[Json], request: RecordedRequest, user: str) -> Answer:
        """A page of the reviews as `ListPullReviews` answers: counted whole, another's pending
        review left out of its page, no `Link` header."""
        limit = number(request.query.get("limit"), DEFAULT_LIMIT)
        limit = min(limit if limit > 0 else DEFAULT_LIMIT, self.max_items)
        page = max(number(request.query.get("page"), 1), 1)
        shown = [
            r
            for r in reviews[(page - 1) * limit : page * limit]
            if r["state"] != "PENDING" or r["user"]["login"] == user
        ]
        return 200, shown, {"X-Total-Count": str(len(reviews))}

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        base = f"{self.prefix}/api/v1/repos/"
        if not path.startswith(base):
            return "unknown", ()
        owner, _, rest = path[len(base) :].partition("/")
        name, _, tail = rest.partition("/")
        for verb, pattern, kind in _ROUTES:
            match = re.fullmatch(pattern, tail)
            if verb == method and match:
                return kind, (unquote(owner), unquote(name), *match.groups())
        return "unknown", ()
