"""The HTTP plumbing the stateful fake platforms share; each fake keeps only its platform's
routes, answers and state.

Owns: the server's life on a free port of 127.0.0.1 (`LoopbackServer`: `origin`, enter/exit)
and a handler's reading and writing (`QuietHandler`), which the fake GitHub uses too; and, for
the fakes of GitLab, Bitbucket Cloud, Bitbucket Data Center, Gitea and Azure DevOps
(`PlatformFake`), the rest of the wire: a request parsed into a `RecordedRequest` (body JSON,
else text; query, last value wins; lower-cased header names), the record of every request
(`requests`, `count`, `counts`) and of every answer (`exchanges`, which `spec_check.py` holds
against the platform's API description), scripted failures (`fail`: the next `times` requests of a
kind, a `{token}` in their body replaced by the request's token) and the answer written with
the fake's own content types (`json_type`, `text_type`, `empty_type`), as the platform's client
library expects them.

A `PlatformFake` subclass gives `route` (a request's kind and arguments), `token_of` (the token
a request carried), `failure_body` (a scripted failure's default body) and `respond` (the
answer, once no scripted failure took the request); `methods` names the HTTP methods it serves
(the standard library answers others 501).
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import parse_qs

from tests.wire_server import QuietHTTPServer

__all__ = [
    "Answer",
    "Exchange",
    "LoopbackServer",
    "PlatformFake",
    "QuietHandler",
    "RecordedRequest",
    "number",
]

Answer = tuple[int, Any, dict[str, str]]  # status, JSON (or text, or None) body, headers


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # as sent: URL-encoded, with the fake's prefix
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: Any
    kind: str
    args: tuple[str, ...] = ()  # what the route names: repository, pull request, comment…


@dataclass(frozen=True)
class Exchange:
    """A request and the answer it got; `scripted` when a scripted failure gave it."""

    request: RecordedRequest
    status: int
    body: Any
    headers: dict[str, str]
    scripted: bool


@dataclass
class _Failure:
    kind: str | None
    status: int
    body: Any
    headers: dict[str, str]
    times: int


class LoopbackServer:
    """A threaded HTTP server on a free port of 127.0.0.1 that `_listen` sets up; serves from
    `__enter__` to `__exit__`, at `origin`. Its handlers find `served` as `self.server.fake`."""

    def _listen(self, handler: type[BaseHTTPRequestHandler], served: object) -> None:
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.fake = served  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        host, port = self._httpd.server_address[:2]
        self.origin = f"http://{host!s}:{port}"  # the port is the server's from here on

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class PlatformFake(LoopbackServer):
    """A fake platform's wire; mixed in before the platform's state (which owns `lock`)."""

    methods: ClassVar[tuple[str, ...]] = ("GET", "POST", "PUT", "DELETE")
    json_type: ClassVar[str] = "application/json"
    text_type: ClassVar[str | None] = "text/plain"  # None: a text answer goes out as JSON
    empty_type: ClassVar[str | None] = None  # None: a None answer goes out as JSON `null`
    lock: threading.RLock  # the state's

    def _serve_http(self, prefix: str = "") -> None:
        """Listen (serve from `__enter__`) at `url`: `origin` and `prefix`, the instance's path."""
        self.prefix = prefix.rstrip("/")
        self._records: list[RecordedRequest] = []
        self._exchanges: list[Exchange] = []
        self._failures: list[_Failure] = []
        self._listen(_Handler, self)
        self.url = self.origin + self.prefix  # the instance's URL

    # what a platform's fake gives
    def route(self, method: str, path: str) -> tuple[str, tuple[str, ...]]:
        """The kind of request `method path` is ("unknown" if none), and its arguments."""
        raise NotImplementedError

    def token_of(self, headers: dict[str, str]) -> str:
        """The token the request carried ("" for none)."""
        raise NotImplementedError

    def failure_body(self, status: int) -> Any:
        """The body of a scripted failure `fail` gives none."""
        raise NotImplementedError

    def respond(self, request: RecordedRequest, token: str) -> Answer:
        """The answer to `request` (under `lock`), no scripted failure having taken it."""
        raise NotImplementedError

    def record(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> RecordedRequest:
        kind, args = self.route(method, path)
        return RecordedRequest(method, path, query, headers, body, kind, args)

    # scripted failures and the record
    def fail(
        self,
        status: int,
        *,
        kind: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next `times` requests of `kind` (any when None) with `status`."""
        if body is None:
            body = self.failure_body(status)
        with self.lock:
            self._failures.append(_Failure(kind, status, body, dict(headers or {}), times))

    @property
    def requests(self) -> list[RecordedRequest]:
        with self.lock:
            return list(self._records)

    @property
    def exchanges(self) -> list[Exchange]:
        with self.lock:
            return list(self._exchanges)

    def count(self, kind: str | None = None) -> int:
        """Requests of `kind` so far (all when None)."""
        with self.lock:
            return sum(kind in (None, r.kind) for r in self._records)

    def counts(self) -> collections.Counter[str]:
        with self.lock:
            return collections.Counter(r.kind for r in self._records)

    def answer(self, request: RecordedRequest) -> Answer:
        """Record `request` and answer it: a scripted failure first, else `respond`."""
        with self.lock:
            self._records.append(request)
            token = self.token_of(request.headers)
            scripted = self._scripted(request.kind)
            if scripted is not None:
                body = json.loads(json.dumps(scripted.body).replace("{token}", token))
                answer: Answer = (scripted.status, body, scripted.headers)
            else:
                answer = self.respond(request, token)
            status, payload, headers = answer
            self._exchanges.append(
                Exchange(request, status, payload, dict(headers), scripted is not None)
            )
            return answer

    def _scripted(self, kind: str) -> _Failure | None:
        for failure in self._failures:
            if failure.kind in (None, kind) and failure.times > 0:
                failure.times -= 1
                return failure
        return None

    def encode(self, payload: Any) -> tuple[bytes, str]:
        """An answer's body as it goes out, and its content type."""
        if payload is None and self.empty_type is not None:
            return b"", self.empty_type
        if isinstance(payload, str) and self.text_type is not None:
            return payload.encode(), self.text_type
        return json.dumps(payload).encode(), self.json_type


class QuietHandler(BaseHTTPRequestHandler):
    """A fake's request handler: HTTP/1.1, no log, the body read and the answer written."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def raw_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def write(self, status: int, data: bytes, content_type: str, extra: dict[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client gave up and closed the socket
            self.close_connection = True


class _Handler(QuietHandler):
    def __getattr__(self, name: str) -> Callable[[], None]:
        """`do_GET` and the rest of the fake's `methods`; the standard library answers any
        other method 501, as it does a handler without its `do_…`."""
        method = name.removeprefix("do_")
        if name.startswith("do_") and method in self.server.fake.methods:  # type: ignore[attr-defined]
            return lambda: self._serve(method)
        raise AttributeError(name)

    def _serve(self, method: str) -> None:
        fake: PlatformFake = self.server.fake  # type: ignore[attr-defined]
        path, _, raw_query = self.path.partition("?")
        raw = self.raw_body()
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        query = {k: v[-1] for k, v in parse_qs(raw_query, keep_blank_values=True).items()}
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, payload, extra = fake.answer(fake.record(method, path, query, headers, body))
        self.write(status, *fake.encode(payload), extra)


def number(value: str | None, default: int) -> int:
    """A query parameter as a number; `default` when absent or not a number."""
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
