"""A stateful fake GitLab API v4 on 127.0.0.1 that python-gitlab parses with its own objects.

    with FakeGitLab(prefix="/gitlab") as gl:
        gl.add_merge_request("group/sub/app", 7, head_sha=HEAD, base_sha=BASE,
                             commentable={"app.py": {3, 4}})
        client = GitLabClient(gl.ref("group/sub/app", 7), BOT_TOKEN)
        ...
        assert gl.count("create_discussion") == 1

Serves what `reviewflow.publish.gitlab.GitLabClient` calls, under `{prefix}/api/v4/projects/
:id/merge_requests/:iid` (`:id` a numeric ID or the URL-encoded path): the merge request (GET);
its discussions (GET, paginated; POST), a discussion (PUT `resolved`), a discussion's notes
(POST); its notes (GET, paginated, newest first; POST), a note (PUT); its diff (GET `diffs`,
paginated). Every request is recorded under one of those kinds (`KINDS`; "unknown" for
anything else). Enforced as GitLab does: 401 for a missing or unknown `PRIVATE-TOKEN`, 404 for
an unknown project or merge request, 403 for a write with a read-only token or an edit of
someone else's note, 400 for a position that names no line of the current diff, or a
`line_range` whose ends' `line_code`s are not the diff's (`LINE_CODE_REFUSED`). Pagination:
`page`, `per_page` (default 20, at most 100), `X-*` headers and `Link` as GitLab sends them.
Scripted failures (`fail`, `rate_limit`) come before everything else; a `{token}` in their body
is replaced by the token the request carried, so tests can prove the client keeps it out of
its messages.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any
from urllib.parse import unquote, urlencode

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_gitlab_state import (
    LINE_CODE_REFUSED,
    ApiError,
    GitLabState,
    Json,
    MergeRequest,
)
from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest, number

__all__ = [
    "BOT",
    "BOT_TOKEN",
    "KINDS",
    "LINE_CODE_REFUSED",
    "READ_ONLY_TOKEN",
    "FakeGitLab",
    "RecordedRequest",
]

BOT = "reviewflow-bot"
BOT_TOKEN = "glpat-fake-bot-7c1d2e3f4a5b"
READ_ONLY_TOKEN = "glpat-fake-readonly-9e8d7c6b5a"
# (method, segments after `merge_requests/:iid`, the first of them) -> kind
_KINDS = {
    ("GET", 0, ""): "get_mr",
    ("GET", 1, "discussions"): "list_discussions",
    ("POST", 1, "discussions"): "create_discussion",
    ("PUT", 2, "discussions"): "resolve_discussion",
    ("POST", 3, "discussions"): "reply",
    ("GET", 1, "notes"): "list_notes",
    ("GET", 1, "diffs"): "list_diffs",
    ("POST", 1, "notes"): "create_note",
    ("PUT", 2, "notes"): "edit_note",
}
KINDS = tuple(_KINDS.values())
_STATUS_TEXT = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class FakeGitLab(PlatformFake, GitLabState):
    """The fake on a free port of 127.0.0.1; use as a context manager."""

    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self._serve_http(prefix)
        self.base_url = self.url
        self.add_token(BOT_TOKEN, BOT)
        self.add_token(READ_ONLY_TOKEN, "fork-bot", write=False)

    @property
    def api_url(self) -> str:
        """The API v4 base, as GitLab CI gives it in `CI_API_V4_URL`."""
        return f"{self.url}/api/v4"

    def ref(self, project: str | int, iid: int) -> RequestRef:
        return RequestRef(platform="gitlab", repo=str(project), number=iid, api_url=self.api_url)

    def token_of(self, headers: dict[str, str]) -> str:
        return headers.get("private-token", "")

    def failure_body(self, status: int) -> Any:
        return {"message": f"{status} {_STATUS_TEXT.get(status, 'Error')}"}

    def rate_limit(
        self,
        *,
        kind: str | None = None,
        status: int = 429,
        retry_after: int | None = 7,
        reset_in: int = 7,
        times: int = 1,
    ) -> None:
        """GitLab's throttle answer: `Retry-After` (unless None) and the `RateLimit-*` headers."""
        reset = int(time.time()) + reset_in
        headers = {
            "RateLimit-Limit": "600",
            "RateLimit-Observed": "601",
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(reset),
            "RateLimit-ResetTime": email.utils.formatdate(reset, usegmt=True),
        }
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        self.fail(status, kind=kind, body="Retry later\n", headers=headers, times=times)

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if request.kind == "unknown":
            return 404, {"error": "404 Not Found"}, {}
        who = self.user_of(token)
        if who is None:
            return 401, {"message": "401 Unauthorized"}, {}
        try:
            mr = self.find(*request.args[:2])
            if request.method != "GET" and not who[1]:
                raise ApiError(403, "403 Forbidden")
            return self._dispatch(request, mr, who[0])
        except ApiError as err:
            return err.status, err.body, {}

    def _dispatch(self, request: RecordedRequest, mr: MergeRequest, user: str) -> Answer:
        data: Json = {**request.query, **(request.body if isinstance(request.body, dict) else {})}
        item = request.args[2] if len(request.args) > 2 else ""
        match request.kind:
            case "get_mr":
                return 200, self.mr_json(mr), {}
            case "list_discussions":
                return self._page(self.discussions(mr.iid, project=mr.project_path), request)
            case "create_discussion":
                return 201, self.create_discussion(mr, user, data), {}
            case "resolve_discussion":
                return 200, self.set_resolved(mr, item, user, data.get("resolved")), {}
            case "reply":
                return 201, self.reply(mr, item, user, data), {}
            case "list_notes":
                notes = sorted(self.all_notes(mr), key=lambda n: n["id"], reverse=True)
                return self._page(notes, request)
            case "list_diffs":
                return self._page(self.diff_json(mr), request)
            case "create_note":
                return 201, self.create_note(mr, user, data), {}
            case _:
                return 200, self.edit_note(mr, item, user, data), {}

    def _page(self, items: list[Json], request: RecordedRequest) -> Answer:
        per_page = number(request.query.get("per_page"), 20)
        per_page = min(per_page if per_page > 0 else 20, 100)
        page = max(number(request.query.get("page"), 1), 1)
        pages = max(1, -(-len(items) // per_page))

        def link(to: int, rel: str) -> str:
            query = urlencode({**request.query, "page": to, "per_page": per_page})
            return f'<{self.origin}{request.path}?{query}>; rel="{rel}"'

        links = [link(page - 1, "prev")] if page > 1 else []
        links += [link(page + 1, "next")] if page < pages else []
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(items)),
            "X-Total-Pages": str(pages),
            "X-Next-Page": str(page + 1) if page < pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
            "Link": ", ".join([*links, link(1, "first"), link(pages, "last")]),
        }
        return 200, items[(page - 1) * per_page : page * per_page], headers

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        """The kind of request `method path` is, and its project, iid and item."""
        api = f"{self.prefix}/api/v4/projects/"
        if not path.startswith(api):
            return "unknown", ()
        parts = [unquote(part) for part in path[len(api) :].split("/")]
        if len(parts) < 3 or parts[1] != "merge_requests":
            return "unknown", ()
        rest = parts[3:]
        kind = _KINDS.get((method, len(rest), rest[0] if rest else ""), "unknown")
        if kind == "reply" and rest[2] != "notes":
            kind = "unknown"
        return kind, (parts[0], parts[2], *rest[1:2])
