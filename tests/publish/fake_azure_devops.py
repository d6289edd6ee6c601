"""A stateful fake Azure DevOps collection on 127.0.0.1 that azure-devops' `GitClient` talks to,
its answers parsed by the library's own models.

    with FakeAzureDevOps() as ado:                      # the collection https://dev.azure.com/acme
        ado.add_pull_request("Fabrikam", "app", 7, head=HEAD, base=BASE,
                             changed={"src/app.py": "edit"})
        client = AzureDevOpsClient(ado.ref("Fabrikam/app", 7), TOKEN)

Serves, under `{prefix}` (the collection's path, `/acme` by default): OPTIONS `/_apis` (the
resource locations the library asks for before its first request, with the route templates
Azure DevOps gives), and under `/{project}/_apis/git/repositories/{repo}/pullRequests/{id}`:
the pull request (GET), its threads (GET, not paged: every thread with its comments; POST), a
thread (PATCH), a thread's comments (POST) and a comment (PATCH), the iterations (GET) and an
iteration's changes (GET, `$top` default 100 and at most 2000, `$skip`, `nextSkip`/`nextTop`).
Enforced as Azure DevOps does: 401 for a missing or unknown token (HTTP Basic, any user name),
404 `TF…` errors for an unknown project, repository or pull request, 403 (TF401027) for a write
with a read-only token, 400 for a malformed file position. A thread may sit on any line of any
path, as on the real service. Scripted failures (`fail`, `rate_limit`) come first; `{token}` in
their body is replaced by the token sent.
"""

from __future__ import annotations

import base64
import time
from typing import Any
from urllib.parse import unquote

from reviewflow.pullrequest.models import RequestRef
from tests.publish.fake_azure_devops_state import ApiError, AzureDevOpsState, Json, PullRequest
from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest

BOT = "Fabrikam Build Service (acme)"
TOKEN = "ado-pat-fake-bot-5b7c9d1e3f"
READ_ONLY_TOKEN = "ado-pat-fake-readonly-2a4c6e"
_GIT = "4e080c62-fa21-4fbc-8fef-2a10a2b38049"  # the git resource area
_PR_ROUTE = "{project}/_apis/{area}/repositories/{repositoryId}"
LOCATIONS = [  # id, resource, route template, resource version: as the service lists them
    ("9946fd70-0d40-406e-b686-b4744cbbcc37", "pullRequests", "/{resource}/{pullRequestId}", 1),
    (
        "ab6e2e5d-a0b7-4153-b64a-a4efe0d49449",
        "threads",
        "/pullRequests/{pullRequestId}/{resource}/{threadId}",
        1,
    ),
    (
        "965a3ec7-5ed8-455a-bdcb-835a5ea7fe7b",
        "comments",
        "/pullRequests/{pullRequestId}/threads/{threadId}/{resource}/{commentId}",
        1,
    ),
    (
        "d43911ee-6958-46b0-a42b-8445b8a0d004",
        "iterations",
        "/pullRequests/{pullRequestId}/{resource}/{iterationId}",
        2,
    ),
    (
        "4216bdcf-b6b1-4d59-8b82-c34cc183fc8b",
        "changes",
        "/pullRequests/{pullRequestId}/iterations/{iterationId}/{resource}",
        1,
    ),
]
# (method, what follows pullRequests/{id}) -> kind
_KINDS = {
    ("GET", ()): "get_pr",
    ("GET", ("threads",)): "list_threads",
    ("POST", ("threads",)): "create_thread",
    ("PATCH", ("threads", "*")): "update_thread",
    ("POST", ("threads", "*", "comments")): "create_comment",
    ("PATCH", ("threads", "*", "comments", "*")): "update_comment",
    ("GET", ("iterations",)): "list_iterations",
    ("GET", ("iterations", "*", "changes")): "list_changes",
}
KINDS = ("options", *_KINDS.values())


class FakeAzureDevOps(PlatformFake, AzureDevOpsState):
    """The fake collection on a free port; use as a context manager."""

    methods = ("GET", "POST", "PATCH", "OPTIONS")
    json_type = "application/json; charset=utf-8"
    text_type = "text/html; charset=utf-8"

    def __init__(self, prefix: str = "/acme") -> None:
        super().__init__()
        self._serve_http(prefix)
        self.add_token(TOKEN, BOT)
        self.add_token(READ_ONLY_TOKEN, "fork-build", write=False)

    def ref(self, repo: str, number: int) -> RequestRef:
        return RequestRef(platform="azure", repo=repo, number=number, api_url=self.url)

    def token_of(self, headers: dict[str, str]) -> str:
        """The token of HTTP Basic, any user name."""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return ""
        try:
            return base64.b64decode(value).decode().partition(":")[2]
        except ValueError:
            return ""

    def failure_body(self, status: int) -> Any:
        return ApiError(status, f"VS{status}: the service failed.").body

    def rate_limit(
        self, *, kind: str | None = None, retry_after: int | None = 7, reset_in: int = 7
    ) -> None:
        """Azure DevOps' throttling answer: 429, `Retry-After` and the `X-RateLimit-*` headers."""
        headers = {
            "X-RateLimit-Resource": "Core",
            "X-RateLimit-Delay": "0.5",
            "X-RateLimit-Limit": "200",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(int(time.time()) + reset_in),
        }
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        body = ApiError(429, "TF400733: The request has been throttled.").body
        self.fail(429, kind=kind, body=body, headers=headers)

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if request.kind == "unknown":
            return 404, ApiError(404, "The controller for path was not found.").body, {}
        who = self.user_of(token)
        if who is None:
            return 401, "<html><body>Access Denied</body></html>", {"WWW-Authenticate": "Basic"}
        if request.kind == "options":
            return 200, _locations(), {}
        try:
            pr = self.find(*request.args[:3])
            if request.method != "GET" and not who[1]:
                raise ApiError(
                    403,
                    "TF401027: You need the Git 'PullRequestContribute' permission to"
                    f" perform this action. Details: identity '{who[0]}', scope"
                    " 'repository'.",
                    "GitNeedsPermissionException",
                )
            return self._dispatch(request, pr, who[0])
        except ApiError as err:
            return err.status, err.body, {}

    def _dispatch(self, request: RecordedRequest, pr: PullRequest, user: str) -> Answer:
        data: Json = request.body if isinstance(request.body, dict) else {}
        ids = request.args[3:]
        match request.kind:
            case "get_pr":
                return 200, self.pull_json(pr), {}
            case "list_threads":
                return 200, _wrapped(pr.threads), {}
            case "create_thread":
                return 200, self.create_thread(pr, user, data), {}
            case "update_thread":
                return 200, self.update_thread(pr, ids[0], data), {}
            case "create_comment":
                return 200, self.create_comment(pr, ids[0], user, data), {}
            case "update_comment":
                return 200, self.update_comment(pr, (ids[0], ids[1]), user, data), {}
            case "list_iterations":
                return 200, _wrapped([self.iteration_json(it) for it in pr.iterations]), {}
            case _:
                return 200, self._changes(pr, ids[0], request.query), {}

    def _changes(self, pr: PullRequest, iteration: str, query: dict[str, str]) -> Json:
        it = next((i for i in pr.iterations if str(i.id) == iteration), None)
        if it is None:
            raise ApiError(404, f"TF401174: The iteration {iteration} was not found.")
        top = min(max(int(query.get("$top") or 100), 1), 2000)
        skip = max(int(query.get("$skip") or 0), 0)
        more = skip + top < len(it.changes)
        return {
            "changeEntries": it.changes[skip : skip + top],
            "nextSkip": skip + top if more else 0,
            "nextTop": top if more else 0,
        }

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        if not path.startswith(self.prefix + "/"):
            return "unknown", ()
        parts = [unquote(part) for part in path[len(self.prefix) + 1 :].split("/")]
        if method == "OPTIONS" and parts in (["_apis"], ["_apis", ""]):
            return "options", ()
        if len(parts) < 6 or parts[1:4] != ["_apis", "git", "repositories"]:
            return "unknown", ()
        if parts[5].lower() != "pullrequests" or len(parts) < 7:
            return "unknown", ()
        rest = parts[7:]
        shape = tuple("*" if i % 2 else part for i, part in enumerate(rest))
        kind = _KINDS.get((method, shape), "unknown")
        return kind, (parts[0], parts[4], parts[6], *rest[1::2])


def _wrapped(items: list[Json]) -> Json:
    return {"count": len(items), "value": items}


def _locations() -> Json:
    return _wrapped(
        [
            {
                "id": location_id,
                "area": "git",
                "resourceName": resource,
                "routeTemplate": _PR_ROUTE + route,
                "resourceVersion": version,
                "minVersion": 1.0,
                "maxVersion": 7.1,
                "releasedVersion": "7.0",
            }
            for location_id, resource, route, version in LOCATIONS
        ]
    )
