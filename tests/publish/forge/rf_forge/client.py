"""Forge's REST API as reviewflow's `PlatformClient`: the request, its threads and notes read
whole; one thread per comment posted; a reply then a resolve; a note written or edited."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from reviewflow.errors import PublishSetupError, TokenRefused, TransientPublishError
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)


class ForgeClient:
    def __init__(self, ref: RequestRef, token: str, timeout_s: float) -> None:
        self._base = f"{ref.api_url}/repos/{ref.repo}/requests/{ref.number}"
        self._where = f"{ref.repo}#{ref.number}"
        self._token = token
        self._timeout_s = timeout_s
        self.calls = 0

    def _call(self, method: str, path: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self._base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Content-Type", "application/json")
        self.calls += 1
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise TokenRefused(f"Forge refused the token for {self._where}") from None
            if exc.code >= 500:
                raise TransientPublishError(f"Forge failed ({exc.code}) on {self._where}") from None
            raise PublishSetupError(f"Forge answered {exc.code} on {self._where}") from None

    def read(self) -> RequestState:
        info = self._call("GET", "")
        threads = [
            Thread(
                id=str(t["id"]),
                path=t["path"],
                resolved=t["resolved"],
                comments=tuple(
                    PostedComment(id=str(c["id"]), body=c["body"]) for c in t["comments"]
                ),
            )
            for t in self._call("GET", "/threads")
        ]
        notes = [SummaryNote(id=str(n["id"]), body=n["body"]) for n in self._call("GET", "/notes")]
        return RequestState(
            info=RequestInfo(
                base_sha=info["base"],
                head_sha=info["head"],
                start_sha=info["base"],
                web_url=info["url"],
            ),
            threads=tuple(threads),
            notes=tuple(notes),
        )

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        for comment in comments:
            line = {"path": comment.path, "line": comment.end_line, "body": comment.body}
            self._call("POST", "/threads", {**line, "commit": info.head_sha})
        return []

    def resolve(self, thread: Thread, reply: str) -> None:
        self._call("POST", f"/threads/{thread.id}/replies", {"body": reply})
        self._call("POST", f"/threads/{thread.id}/resolve", {})

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        if note is None:
            self._call("POST", "/notes", {"body": body})
        else:
            self._call("PUT", f"/notes/{note.id}", {"body": body})
