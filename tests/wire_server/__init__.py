"""A scripted local HTTP server speaking each model protocol's wire format, as the SDKs do.

    with WireServer() as wire:
        wire.script("openai", [ToolCalls(Call("file_read", {"file_path": "a.py"})), Text("done")])
        provider = create_provider(wire.settings("openai"))
        ...
        assert wire.requests("openai")[1].body["messages"][-1]["role"] == "tool"

Every request consumes one scripted reply of its protocol (`ToolCalls`, `Text`, `HttpError`,
`Delay`, `Disconnect`, `Empty`, `Raw`, `Trickle`); an unscripted request gets HTTP 500 and is
counted in `unexpected`. Every request is recorded (path, lower-cased headers, parsed JSON body).
Error bodies echo the credential the server received, so tests can prove redaction.

The cloud platforms' paths reach the same scripts, by protocol: Bedrock's `/model/{id}/invoke`
and Vertex AI's `publishers/anthropic/models/{m}:rawPredict` are `anthropic`, Vertex AI's
`publishers/google/models/{m}:generateContent` is `gemini`, Azure OpenAI's
`/openai/deployments/{d}/chat/completions` is `openai` (`record.platform` tells them apart).
`POST /token` is an OAuth token endpoint (as Google's): it grants `GOOGLE_TOKEN` to anyone, so a
service account file whose `token_uri` names it gives Application Default Credentials without
the network.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import unquote

from pydantic import SecretStr

from reviewflow.config import ModelSettings
from tests.wire_server.formats import error_body, render
from tests.wire_server.replies import (
    AUTO_ID,
    PROTOCOLS,
    TEST_KEY,
    Call,
    Delay,
    Disconnect,
    Empty,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    Text,
    ToolCalls,
    Trickle,
    WireUsage,
)

__all__ = [
    "AUTO_ID",
    "GOOGLE_TOKEN",
    "PROTOCOLS",
    "TEST_KEY",
    "Call",
    "Delay",
    "Disconnect",
    "Empty",
    "HttpError",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Text",
    "ToolCalls",
    "Trickle",
    "WireServer",
    "WireUsage",
]

Responder = Callable[[RecordedRequest], Reply]

_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):generateContent$")
_BEDROCK_PATH = re.compile(r"^/model/(?P<model>[^/]+)/invoke$")
_VERTEX_PATH = re.compile(r"^/v1/projects/[^/]+/locations/[^/]+/publishers/(?P<publisher>\w+)/")
_VERTEX_CLAUDE_PATH = re.compile(r"/models/(?P<model>[^/:]+):rawPredict$")
_AZURE_PATH = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
TOKEN_PATH = "/token"
GOOGLE_TOKEN = "ya29.wire-test-token-Hq3Nf8Ld"


class QuietHTTPServer(ThreadingHTTPServer):
    """A test server that does not print a traceback when a client hangs up mid-request (a
    cancelled review, a client timing out on purpose): that is the client's business."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class WireServer:
    """The scripted server on 127.0.0.1, or on `host` (a free port); use as a context manager."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Reply]] = {p: deque() for p in PROTOCOLS}
        self._responders: dict[str, Responder] = {}
        self._records: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self.stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self.unexpected = 0
        self._httpd = QuietHTTPServer((host, 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.wire = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def base_url(self, protocol: str) -> str:
        """The endpoint to configure for `protocol` (OpenAI's carries its `/v1`)."""
        return f"{self.url}/v1" if protocol == "openai" else self.url

    def platform_settings(
        self,
        platform: str,
        protocol: str,
        name: str = "test-model",
        timeout: float = 5.0,
        key: str | None = None,
        **fields: Any,
    ) -> ModelSettings:
        """Model settings on a cloud platform, its endpoint this server (`fields`: region,
        project, deployment, api_version)."""
        return ModelSettings(
            platform=platform,
            protocol=protocol,
            name=name,
            endpoint=self.url,
            timeout=timeout,
            api_key=SecretStr(key) if key else None,
            **fields,
        )

    def settings(
        self,
        protocol: str,
        name: str = "test-model",
        timeout: float = 5.0,
        key: str | None = TEST_KEY,
    ) -> ModelSettings:
        """Model settings pointing at this server."""
        return ModelSettings(
            protocol=protocol,
            name=name,
            endpoint=self.base_url(protocol),
            timeout=timeout,
            api_key=SecretStr(key) if key else None,
        )

    def script(self, protocol: str, replies: Iterable[Reply]) -> None:
        """Queue replies for the next requests of `protocol`."""
        with self._lock:
            self._scripts[protocol].extend(replies)

    def respond(self, protocol: str, responder: Responder) -> None:
        """Answer requests of `protocol` with `responder(record)` once its script is used up
        (for concurrent stages, where the order requests arrive in is not fixed)."""
        with self._lock:
            self._responders[protocol] = responder

    def requests(self, protocol: str | None = None) -> list[RecordedRequest]:
        """The recorded requests, oldest first."""
        with self._lock:
            return [r for r in self._records if protocol in (None, r.protocol)]

    def pending(self, protocol: str) -> int:
        with self._lock:
            return len(self._scripts[protocol])

    def assert_done(self) -> None:
        """Every scripted reply was used and no request came unscripted."""
        with self._lock:
            left = {p: len(q) for p, q in self._scripts.items() if q}
        assert not left, f"scripted replies not used: {left}"
        assert self.unexpected == 0, f"{self.unexpected} unscripted request(s)"

    def next_id(self) -> int:
        return next(self._ids)

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._records.append(record)

    def _begin(self, record: RecordedRequest) -> Reply | None:
        with self._lock:
            self._records.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queue = self._scripts.get(record.protocol)
            if queue:
                return queue.popleft()
            responder = self._responders.get(record.protocol)
        if responder is not None:
            return responder(record)
        with self._lock:
            self.unexpected += 1
        return None

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def wire(self) -> WireServer:
        return self.server.wire  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        path, _, query = self.path.partition("?")
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path == TOKEN_PATH:
            self.wire._record(RecordedRequest("token", path, headers, body, "", "", query, raw))
            token = {"access_token": GOOGLE_TOKEN, "expires_in": 3600, "token_type": "Bearer"}
            self._send(200, token, {})
            return
        protocol, model, platform = _route(path, body)
        record = RecordedRequest(protocol, path, headers, body, model, platform, query, raw)
        reply = self.wire._begin(record)
        try:
            self._answer(record, reply)
        finally:
            self.wire._end()

    def _answer(self, record: RecordedRequest, reply: Reply | None) -> None:
        while isinstance(reply, Delay):
            if self.wire.stopping.wait(reply.seconds):
                return
            reply = reply.then
        if isinstance(reply, Disconnect):
            self.close_connection = True
            return
        if isinstance(reply, Trickle):
            self._trickle(record, reply)
            return
        if reply is None:
            status, payload = 500, error_body(record, 500, "wire server: no scripted reply")
        else:
            status, payload = render(record, reply, self.wire.next_id())
        extra = reply.headers if isinstance(reply, HttpError) else {}
        if isinstance(reply, Raw):
            extra = {"content-type": reply.content_type, **reply.headers}
        self._send(status, payload, extra)

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        headers = {"content-type": "application/json", **headers}
        try:
            self._head(status, len(data), headers)
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client gave up (timeout) and closed the socket
            self.close_connection = True

    def _head(self, status: int, length: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-length", str(length))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def _trickle(self, record: RecordedRequest, reply: Trickle) -> None:
        """Headers now; then JSON-neutral padding, a byte per interval; then the answer."""
        status, payload = render(record, reply.then, self.wire.next_id())
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        padding = max(1, round(reply.seconds / reply.interval))
        try:
            self._head(status, padding + len(data), {"content-type": "application/json"})
            for _ in range(padding):
                if self.wire.stopping.wait(reply.interval):
                    self.close_connection = True
                    return
                self.wfile.write(b" ")
                self.wfile.flush()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client gave up (deadline) and closed the socket
            self.close_connection = True


def _route(path: str, body: Any) -> tuple[str, str, str]:
    """(protocol, model, platform) of a request path."""
    model = str(body.get("model", "") if isinstance(body, dict) else "")
    if match := _AZURE_PATH.match(path):
        return "openai", model, "azure"
    if path.endswith("/chat/completions"):
        return "openai", model, "direct"
    if path.endswith("/v1/messages"):
        return "anthropic", model, "direct"
    if match := _BEDROCK_PATH.match(path):
        return "anthropic", unquote(match.group("model")), "bedrock"
    platform = "vertex" if _VERTEX_PATH.match(path) else "direct"
    if (match := _VERTEX_CLAUDE_PATH.search(path)) and platform == "vertex":
        return "anthropic", match.group("model"), platform
    if match := _GEMINI_PATH.search(path):
        return "gemini", match.group("model"), platform
    return "unknown", model, "direct"
