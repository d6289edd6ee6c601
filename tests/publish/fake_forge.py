"""A small stateful fake of Forge, the plugin platform of `tests/publish/forge/rf_forge`: one
repository's change requests (base and head), their threads (a comment, replies, resolved or
not) and notes, behind the token `TOKEN`; every request is recorded (`PlatformFake`)."""

from __future__ import annotations

import itertools
import re
import threading
from typing import Any

from tests.publish.fake_http import Answer, PlatformFake, RecordedRequest

TOKEN = "forge-token-0123456789"
_ROUTES = (
    ("GET", r"/repos/(\w+/\w+)/requests/(\d+)", "request"),
    ("GET", r"/repos/(\w+/\w+)/requests/(\d+)/threads", "threads"),
    ("GET", r"/repos/(\w+/\w+)/requests/(\d+)/notes", "notes"),
    ("POST", r"/repos/(\w+/\w+)/requests/(\d+)/threads", "post"),
    ("POST", r"/repos/(\w+/\w+)/requests/(\d+)/threads/(\d+)/replies", "reply"),
    ("POST", r"/repos/(\w+/\w+)/requests/(\d+)/threads/(\d+)/resolve", "resolve"),
    ("POST", r"/repos/(\w+/\w+)/requests/(\d+)/notes", "note"),
    ("PUT", r"/repos/(\w+/\w+)/requests/(\d+)/notes/(\d+)", "edit"),
)


class FakeForge(PlatformFake):
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._serve_http("/api")
        self.api_url = self.url

    def add_request(self, repo: str, number: int, base: str, head: str) -> None:
        with self.lock:
            url = f"https://forge.example/{repo}/requests/{number}"
            self.pulls[(repo, number)] = {"base": base, "head": head, "url": url}
            self.pulls[(repo, number)].update(threads=[], notes=[])

    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        path = path.removeprefix(self.prefix)
        for verb, pattern, kind in _ROUTES:
            found = re.fullmatch(pattern, path)
            if verb == method and found:
                return kind, found.groups()
        return "unknown", ()

    def token_of(self, headers: dict[str, str]) -> str:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def failure_body(self, status: int) -> Any:
        return {"error": status}

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        if token != TOKEN:
            return 401, {"error": "bad token"}, {}
        repo, number, *rest = request.args or ("", "0")
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            return 404, {"error": "no such request"}, {}
        body = request.body or {}
        match request.kind:
            case "request":
                return 200, {k: pull[k] for k in ("base", "head", "url")}, {}
            case "threads" | "notes":
                return 200, pull[request.kind], {}
            case "post":
                comment = {"id": next(self._ids), "body": body["body"]}
                thread = {"id": next(self._ids), "path": body["path"], "line": body["line"]}
                pull["threads"].append({**thread, "resolved": False, "comments": [comment]})
                return 201, thread, {}
            case "reply" | "resolve":
                [thread] = [t for t in pull["threads"] if str(t["id"]) == rest[0]]
                if request.kind == "reply":
                    thread["comments"].append({"id": next(self._ids), "body": body["body"]})
                thread["resolved"] = thread["resolved"] or request.kind == "resolve"
                return 200, {}, {}
            case "note":
                pull["notes"].append({"id": next(self._ids), "body": body["body"]})
                return 201, pull["notes"][-1], {}
            case "edit":
                [note] = [n for n in pull["notes"] if str(n["id"]) == rest[0]]
                note["body"] = body["body"]
                return 200, note, {}
        return 404, {"error": "no such route"}, {}
