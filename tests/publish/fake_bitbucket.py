"""A stateful fake Bitbucket Cloud API 2.0 on 127.0.0.1 that atlassian-python-api parses with
its own Cloud models (`PullRequest`, `Comment`, `Commit`).

    with FakeBitbucket() as bb:
        bb.add_pull_request("acme/app", 7, source_hash=HEAD, destination_hash=BASE,
                            commentable={"app.py": {3, 4}})
        client = BitbucketCloudClient(bb.ref("acme/app", 7), TOKEN)
        ...
        assert bb.count("create_comment") == 1

Serves, under `/2.0/repositories/{workspace}/{repo_slug}/`: a pull request (GET
`pullrequests/{id}`); its comments (GET, paginated as Bitbucket does: `pagelen` default 10, at
most 100, `page`, `size`, `next` an absolute URL; POST: top-level, `inline`, or a reply with
`parent`), a comment (PUT, its author only), its resolution (POST `.../resolve`: 403 for a
reply, 409 when already resolved); the pull request's diff (GET `pullrequests/{id}/diff`
answers 302 to `diff/{spec}`, which serves the text); a commit by its hash or a prefix (GET
`commit/{hash}`). Enforced as Bitbucket does: 401 for a missing or unknown Bearer token, 404 for
an unknown repository, pull request or comment, 403 for a write with a read-only token (its
scopes named), 400 for an `inline` without a path or line or with `start_to` after `to`.
Bitbucket keeps an inline comment on a line outside the diff's hunks (`outside_diff` lists
them). Scripted failures (`fail`, `rate_limit`) come before everything else; a `{token}` in
their body becomes the token the request carried.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import quote, unquote, urlencode

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_bitbucket_state import ApiError, BitbucketState, Json, Pull
from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest, number

BOT = "reviewflow-bot"
TOKEN = "ATCTT3xFfGN0-fake-bot-5d1c9e"
READ_ONLY_TOKEN = "ATCTT3xFfGN0-fake-readonly-77aa"
# (method, path after `pullrequests/{id}`) -> kind; `{c}`: a comment ID
_PULL_KINDS = {
    ("GET", ""): "get_pr",
    ("GET", "comments"): "list_comments",
    ("POST", "comments"): "create_comment",
    ("PUT", "comments/{c}"): "edit_comment",
    ("POST", "comments/{c}/resolve"): "resolve",
    ("GET", "diff"): "pr_diff",
}
KINDS = (*_PULL_KINDS.values(), "get_diff", "get_commit")
_RATE_LIMITED = "Rate limit for this resource has been exceeded"


class FakeBitbucket(PlatformFake, BitbucketState):
    """The fake on a free port of 127.0.0.1; use as a context manager."""

    json_type = "application/json; charset=utf-8"

    def __init__(self) -> None:
        super().__init__()
        self._serve_http()
        self.add_token(TOKEN, BOT)
        self.add_token(READ_ONLY_TOKEN, "readonly-bot", write=False)

    @property
    def api_url(self) -> str:
        return f"{self.origin}/2.0"

    def ref(self, repo: str, number: int) -> RequestRef:
        return RequestRef(platform="bitbucket", repo=repo, number=number, api_url=self.api_url)

    def token_of(self, headers: dict[str, str]) -> str:
        auth = headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""

    def failure_body(self, status: int) -> Any:
        return {"type": "error", "error": {"message": f"Something went wrong ({status})"}}

    def record(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> RecordedRequest:
        """A diff's record names the pull request it is of (`from_pullrequest_id`)."""
        request = super().record(method, path, query, headers, body)
        if request.kind != "get_diff":
            return request
        return replace(request, args=(*request.args, query.get("from_pullrequest_id", "")))

    def rate_limit(self, *, kind: str | None = None, retry_after: int | None = None) -> None:
        """Bitbucket Cloud's 429: plain text, and no `Retry-After` unless one is given."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        self.fail(429, kind=kind, body=_RATE_LIMITED, headers=headers)

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if request.kind == "unknown":
            return 404, ApiError(404, "Resource not found").body, {}
        who = self.user_of(token)
        if who is None:
            return 401, ApiError(401, "Token is invalid or not supported").body, {}
        try:
            if request.method != "GET" and not who[1]:
                raise ApiError(
                    403,
                    "Your credentials lack one or more required privilege scopes.",
                    {"granted": ["pullrequest"], "required": ["pullrequest:write"]},
                )
            return self._dispatch(request, who[0])
        except ApiError as err:
            return err.status, err.body, {}

    def _dispatch(self, request: RecordedRequest, user: str) -> Answer:
        repo = request.args[0]
        if request.kind == "get_commit":
            return 200, self.commit_json(repo, request.args[1]), {}
        pull = self.find(repo, request.args[1])
        data: Json = request.body if isinstance(request.body, dict) else {}
        match request.kind:
            case "get_pr":
                return 200, self.pull_json(pull), {}
            case "list_comments":
                return self._page(pull, request)
            case "create_comment":
                return 201, self.create_comment(pull, user, data), {}
            case "edit_comment":
                return 200, self.edit_comment(pull, request.args[2], user, data), {}
            case "resolve":
                return 200, self.resolve(pull, request.args[2], user), {}
            case "pr_diff":
                spec = quote(f"{repo}:{pull.source_hash[:12]}\r{pull.destination_hash[:12]}")
                where = f"{self.origin}/2.0/repositories/{repo}/diff/{spec}"
                return 302, "", {"Location": f"{where}?from_pullrequest_id={pull.id}"}
            case _:
                return 200, pull.diff, {}

    def _page(self, pull: Pull, request: RecordedRequest) -> Answer:
        pagelen = min(max(number(request.query.get("pagelen"), 10), 1), 100)
        page = max(number(request.query.get("page"), 1), 1)
        values = pull.comments[(page - 1) * pagelen : page * pagelen]
        body: Json = {
            "pagelen": pagelen,
            "page": page,
            "size": len(pull.comments),
            "values": json.loads(json.dumps(values)),
        }
        if page * pagelen < len(pull.comments):
            query = urlencode({**request.query, "page": page + 1, "pagelen": pagelen})
            body["next"] = f"{self.origin}{request.path}?{query}"
        return 200, body, {}

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        """The kind of request `method path` is, and its repository, pull request, comment."""
        parts = [unquote(p) for p in path.split("/")]
        if len(parts) < 6 or parts[1:3] != ["2.0", "repositories"]:
            return "unknown", ()
        repo, rest = f"{parts[3]}/{parts[4]}", parts[5:]
        if rest[0] == "commit" and len(rest) == 2 and method == "GET":
            return "get_commit", (repo, rest[1])
        if rest[0] == "diff" and method == "GET":
            return "get_diff", (repo,)  # the pull request: `from_pullrequest_id` (`record`)
        if rest[0] != "pullrequests" or len(rest) < 2:
            return "unknown", ()
        tail = rest[2:]
        shape = "/".join(
            "{c}" if i == 1 and tail[0] == "comments" else p for i, p in enumerate(tail)
        )
        kind = _PULL_KINDS.get((method, shape), "unknown")
        return kind, (repo, rest[1], *tail[1:2])
