"""The fake GitHub's HTTP side: authentication, scripted faults, recording, dispatch."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.publish.fake_github import graphql, rest
from tests.publish.fake_github.shapes import Urls
from tests.publish.fake_github.state import DOCS, ApiError, Store, User
from tests.publish.fake_http import QuietHandler

GRAPHQL_DOCS = "https://docs.github.com/graphql"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    kind: str


@dataclass
class Fault:
    """The answer the next `count` requests of `kind` (a prefix; "" for any) get instead,
    once `after` of them went through."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    count: int = 1
    kind: str = ""
    after: int = 0


class Api:
    """Everything behind the socket, called one request at a time under `lock`."""

    def __init__(self, prefix: str, api_versions: tuple[str, ...] | None) -> None:
        self.lock = threading.Lock()
        self.store = Store()
        self.prefix = prefix
        self.graphql_path = "/api/graphql" if prefix else "/graphql"
        self.api_versions = api_versions
        self.urls = Urls("", "")
        self.records: list[RecordedRequest] = []
        self.counts: Counter[str] = Counter()
        self.faults: list[Fault] = []

    def answer(
        self, method: str, target: str, headers: dict[str, str], body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query))
        with self.lock:
            kind, document = self._kind(method, parts.path, body)
            record = RecordedRequest(method, parts.path, query, headers, body, kind)
            self.records.append(record)
            self.counts[kind] += 1
            status, payload, extra = self._dispatch(record, document)
        return status, payload, {**_rate_headers(kind), **extra}

    def _kind(self, method: str, path: str, body: Any) -> tuple[str, graphql.Document | str]:
        """The request's kind (a REST route's, or `graphql.` and its root fields) and, for
        GraphQL, the parsed document or why it did not parse."""
        if path == self.graphql_path and method == "POST":
            data = body if isinstance(body, dict) else {}
            if not data.get("query"):
                return "graphql.invalid", "A query attribute must be specified"
            try:
                document = graphql.parse(str(data["query"]), data.get("variables"))
            except graphql.SchemaError as exc:
                return "graphql.invalid", str(exc)
            return "graphql." + "+".join(graphql.root_names(document)), document
        relative = path.removeprefix(self.prefix) if path.startswith(self.prefix) else None
        found = rest.find(method, relative) if relative is not None else None
        return (found[0].kind if found else f"unknown {method} {path}"), ""

    def _dispatch(
        self, record: RecordedRequest, document: graphql.Document | str
    ) -> tuple[int, Any, dict[str, str]]:
        fault = self._take_fault(record.kind)
        if fault is not None:
            return fault.status, fault.body, fault.headers
        user = self._user(record.headers)
        if user is None:
            docs = GRAPHQL_DOCS if record.kind.startswith("graphql") else DOCS
            return (
                401,
                {"message": "Bad credentials", "documentation_url": docs, "status": "401"},
                {},
            )
        try:
            if record.kind.startswith("graphql"):
                return self._graphql(document, user)
            return self._rest(record, user)
        except ApiError as exc:
            return exc.status, exc.body, exc.headers

    def _graphql(
        self, document: graphql.Document | str, user: User
    ) -> tuple[int, Any, dict[str, str]]:
        if isinstance(document, str):
            return 200, {"errors": [{"message": document}]}, {}
        try:
            return 200, graphql.execute(document, self.store, user), {}
        except graphql.SchemaError as exc:
            error = {"message": str(exc), "extensions": {"code": "undefinedField"}}
            return 200, {"errors": [error]}, {}

    def _rest(self, record: RecordedRequest, user: User) -> tuple[int, Any, dict[str, str]]:
        method, path = record.method, record.path
        version = record.headers.get("x-github-api-version")
        if self.api_versions is not None and version and version not in self.api_versions:
            raise ApiError(400, f"Unsupported API version {version}")
        relative = path.removeprefix(self.prefix) if path.startswith(self.prefix) else None
        found = rest.find(method, relative) if relative is not None else None
        if relative is None or found is None:
            raise ApiError(404, "Not Found")
        route, params = found
        if route.writes and user.read_only:
            raise ApiError(403, "Resource not accessible by integration")
        call = rest.Call(self.store, user, self.urls, relative, record.query, record.body, params)
        return route.handler(call)

    def _user(self, headers: dict[str, str]) -> User | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return None
        return self.store.tokens.get(token.strip())

    def _take_fault(self, kind: str) -> Fault | None:
        for fault in self.faults:
            if kind.startswith(fault.kind):
                if fault.after > 0:
                    fault.after -= 1
                    return None
                fault.count -= 1
                if fault.count <= 0:
                    self.faults.remove(fault)
                return fault
        return None


def _rate_headers(kind: str) -> dict[str, str]:
    return {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4999",
        "x-ratelimit-reset": str(int(time.time()) + 3600),
        "x-ratelimit-used": "1",
        "x-ratelimit-resource": "graphql" if kind.startswith("graphql") else "core",
    }


class Handler(QuietHandler):
    @property
    def api(self) -> Api:
        return self.server.fake  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _handle(self, method: str) -> None:
        raw = self.raw_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            self._send(400, {"message": "Problems parsing JSON"}, {})
            return
        status, payload, extra = self.api.answer(method, self.path, headers, body)
        self._send(status, payload, extra)

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.write(status, data, "application/json; charset=utf-8", headers)
