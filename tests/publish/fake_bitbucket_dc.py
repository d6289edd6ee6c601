"""A stateful fake Bitbucket Data Center (REST API 1.0) on 127.0.0.1 that atlassian-python-api
talks to as to a real server.

    with FakeBitbucketDC(prefix="/bitbucket") as bb:
        bb.add_pull_request("PROJ/app", 7, head_sha=HEAD, target_sha=TARGET,
                            commentable={"app.py": {3, 4}})
        client = BitbucketServerClient(bb.ref("PROJ/app", 7), BOT_TOKEN, 5.0)
        ...
        assert bb.count("create_comment") == 1

Serves, under `{prefix}/rest/api/1.0/projects/{key}/repos/{slug}/pull-requests/{id}`: the pull
request (GET), its merge base (GET `merge-base`), its effective diff (GET `diff`), its activities
(GET, paged), comments (POST: a general or file comment, or a reply with `parent`), a comment
(GET; PUT `text` / `threadResolved` with its `version`). Every request is recorded under one of
`KINDS` ("unknown" for anything else). Enforced as Bitbucket does: 401 for a missing or unknown
bearer token, 401 for a write with a Repository read token ("insufficient permissions", as
Bitbucket answers), 404 for an unknown project, repository, pull request or comment, 400 for an
anchor that is not a line of the current diff (of the right `lineType`, on the current head,
with the old path of a renamed file), 409 for a stale comment `version`, 401 for editing
another's text. Paging as Bitbucket's: `start`, `limit` (default 25, capped at `MAX_LIMIT`, the
fake's assumption of a server's cap), `size`, `isLastPage`, `nextPageStart`. Scripted failures
(`fail`, `rate_limit`) come first; a `{token}` in their body becomes the request's token, so
tests can prove the client keeps it out of its messages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_bitbucket_dc_state import ANCHOR_REFUSED, ApiError, BitbucketState, Json
from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest, number

__all__ = ["ANCHOR_REFUSED", "BOT", "BOT_TOKEN", "KINDS", "READ_ONLY_TOKEN", "FakeBitbucketDC"]

BOT = "reviewflow-bot"
BOT_TOKEN = "BBDC-fakeBotToken0123456789abcdef"
READ_ONLY_TOKEN = "BBDC-fakeReadOnly9876543210fedcba"
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
_KINDS = {
    ("GET", ""): "get_pr",
    ("GET", "merge-base"): "merge_base",
    ("GET", "diff"): "get_diff",
    ("GET", "activities"): "list_activities",
    ("POST", "comments"): "create_comment",
    ("GET", "comments/"): "get_comment",
    ("PUT", "comments/"): "update_comment",
}
KINDS = tuple(_KINDS.values())
_UNAUTHORIZED = "Authentication failed. Please check your credentials and try again."
_NO_WRITE = (
    "The currently authenticated user has insufficient permissions to create a comment"
    " or watch the pull request."
)


class FakeBitbucketDC(PlatformFake, BitbucketState):
    """The fake on a free port of 127.0.0.1; use as a context manager."""

    # Bitbucket's own content type, errors too: atlassian-python-api's 401 handling looks for it
    json_type = empty_type = "application/json;charset=UTF-8"
    text_type = None

    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self._serve_http(prefix)
        self.base_url = self.url
        self.add_token(BOT_TOKEN, BOT)
        self.add_token(READ_ONLY_TOKEN, "ci-reader", write=False)

    def ref(self, repo: str, number: int, *, api_suffix: str = "") -> RequestRef:
        return RequestRef(
            platform="bitbucket", repo=repo, number=number, api_url=self.url + api_suffix
        )

    def token_of(self, headers: dict[str, str]) -> str:
        auth = headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""

    def failure_body(self, status: int) -> Any:
        return ApiError(status, f"HTTP {status} from the fake").body

    def rate_limit(self, *, kind: str | None = None, retry_after: int | None = 7) -> None:
        """Bitbucket's rate limiting: 429, with `Retry-After` unless None."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        body = ApiError(429, "Too many requests: you have been rate limited.").body
        self.fail(429, kind=kind, body=body, headers=headers)

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if request.kind == "unknown":
            return 404, ApiError(404, "This resource does not exist.").body, {}
        who = self.user_of(token)
        if who is None:
            return 401, ApiError(401, _UNAUTHORIZED).body, {}
        try:
            pr = self.find(*request.args[:3])
            if request.method != "GET" and not who[1]:
                raise ApiError(401, _NO_WRITE, "com.atlassian.bitbucket.AuthorisationException")
            return self._dispatch(request, pr, who[0])
        except ApiError as err:
            return err.status, err.body, {}

    def _dispatch(self, request: RecordedRequest, pr: Any, user: str) -> Answer:
        data: Json = request.body if isinstance(request.body, dict) else {}
        item = int(request.args[3]) if len(request.args) > 3 and request.args[3].isdigit() else -1
        match request.kind:
            case "get_pr":
                return 200, self.pr_json(pr), {}
            case "merge_base":
                return 200, {"id": pr.merge_base, "displayId": pr.merge_base[:11]}, {}
            case "get_diff":
                return 200, self.diff_json(pr), {}
            case "list_activities":
                return self._page(self.activities(pr), request)
            case "create_comment":
                return 201, self.create_comment(pr, user, data), {}
            case "get_comment":
                return 200, self.comment_json(pr, item), {}
            case _:
                return 200, self.update_comment(pr, item, user, data), {}

    def _page(self, items: list[Json], request: RecordedRequest) -> Answer:
        limit = number(request.query.get("limit"), DEFAULT_LIMIT)
        limit = min(limit if limit > 0 else DEFAULT_LIMIT, MAX_LIMIT)
        start = max(number(request.query.get("start"), 0), 0)
        values = items[start : start + limit]
        last = start + limit >= len(items)
        page: Json = {
            "size": len(values),
            "limit": limit,
            "start": start,
            "isLastPage": last,
            "values": values,
        }
        if not last:
            page["nextPageStart"] = start + limit
        return 200, page, {}

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        """The kind of request `method path` is, and its project, slug, ID and comment ID."""
        api = f"{self.prefix}/rest/api/1.0/projects/"
        if not path.startswith(api):
            return "unknown", ()
        parts = [unquote(part) for part in path[len(api) :].rstrip("/").split("/")]
        if len(parts) < 4 or parts[1] != "repos" or parts[3] != "pull-requests" or len(parts) < 5:
            return "unknown", ()
        rest = parts[5:]
        key = rest[0] if len(rest) == 1 else (f"{rest[0]}/" if len(rest) == 2 else "")
        if len(rest) > 2:
            return "unknown", ()
        kind = _KINDS.get((method, key), "unknown")
        return kind, (parts[0], parts[2], parts[4], *rest[1:2])
