"""Record and replay every model answer at the HTTP level: a proxy in front of the endpoint.

reviewflow and the judge talk to the proxy on 127.0.0.1 as if it were the model's endpoint
(`--endpoint`); the proxy forwards each request to the real endpoint and keeps the request body
and the answer in the case's cassette (`record`), or answers from the cassette without any
connection (`replay`). Only bodies are kept: headers (where the API key travels) and query
strings are never written. A request is found again by a hash of its method, path and JSON
body; identical requests are answered in the order they were recorded.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from reviewflow.config import protocol_spec

_DROPPED_HEADERS = {"host", "content-length", "accept-encoding", "connection"}


@dataclass
class Exchange:
    key: str
    stage: str
    path: str
    request: Any
    status: int
    content_type: str
    response: str

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "stage": self.stage,
            "path": self.path,
            "request": self.request,
            "status": self.status,
            "content_type": self.content_type,
            "response": self.response,
        }


@dataclass
class Tape:
    """The exchanges of one case, recorded or to replay; thread-safe."""

    exchanges: list[Exchange] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    _served: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_json(cls, items: list[dict[str, Any]]) -> Tape:
        return cls([Exchange(**item) for item in items])

    def as_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [exchange.as_json() for exchange in self.exchanges]

    def add(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def find(self, key: str) -> Exchange | None:
        """The next recorded answer to this request, or None (a miss, kept in `misses`)."""
        with self._lock:
            same = [e for e in self.exchanges if e.key == key]
            n = self._served[key]
            if n < len(same):
                self._served[key] += 1
                return same[n]
            if same:  # asked more often than recorded: the last answer again
                return same[-1]
            self.misses.append(key)
            return None


def request_key(method: str, path: str, body: bytes) -> str:
    """A stable key of a request: method, path without query, canonical JSON body."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    except (ValueError, UnicodeDecodeError):
        canonical = body.decode("latin-1")
    text = f"{method} {path.split('?', 1)[0]}\n{canonical}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Proxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str | None, tape: Tape, stage: list[str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream.rstrip("/") if upstream else None
        self.tape = tape
        self.stage = stage  # one mutable cell: what the harness is asking for now
        self.client = httpx.Client(timeout=httpx.Timeout(900.0, connect=30.0))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request (a cancelled review) is its own business: no
        traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Proxy

    def log_message(self, format: str, *args: Any) -> None:
        return  # the harness reports per case; no line per request

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0]
        key = request_key("POST", path, body)
        proxy = self.server
        if proxy.upstream is None:
            found = proxy.tape.find(key)
            if found is None:
                self._send(599, "application/json", '{"error": "not in the cassette"}')
                return
            self._send(found.status, found.content_type, found.response)
            return
        exchange = self._forward(key, path, body)
        proxy.tape.add(exchange)
        self._send(exchange.status, exchange.content_type, exchange.response)

    def _forward(self, key: str, path: str, body: bytes) -> Exchange:
        proxy = self.server
        assert proxy.upstream is not None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _DROPPED_HEADERS}
        sent = _official_openai(proxy.upstream, body)
        url = proxy.upstream + self.path
        try:
            answer = proxy.client.post(url, content=sent, headers=headers)
            status, text = answer.status_code, answer.text
            ctype = answer.headers.get("content-type", "application/json")
        except httpx.HTTPError as exc:
            status, ctype = 599, "application/json"
            text = json.dumps(
                {"error": f"proxy could not reach the endpoint: {type(exc).__name__}"}
            )
        try:
            recorded: Any = json.loads(body)
        except ValueError:
            recorded = body.decode("utf-8", "replace")
        return Exchange(key, proxy.stage[0], path, recorded, status, ctype, text)

    def _send(self, status: int, content_type: str, text: str) -> None:
        payload = text.encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _official_openai(upstream: str, body: bytes) -> bytes:
    """reviewflow sends `max_tokens` to any endpoint but OpenAI's own, which wants
    `max_completion_tokens`: behind the proxy, restore the name OpenAI's endpoint expects."""
    if upstream != protocol_spec("openai").default_endpoint:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict) and "max_tokens" in data:
        data["max_completion_tokens"] = data.pop("max_tokens")
        return json.dumps(data).encode("utf-8")
    return body


@dataclass
class Proxy:
    url: str
    stage: list[str]

    def set_stage(self, name: str) -> None:
        self.stage[0] = name


@contextmanager
def proxy(upstream: str | None, tape: Tape) -> Iterator[Proxy]:
    """A proxy on a free loopback port: recording to `tape` in front of `upstream`, or
    replaying `tape` when `upstream` is None."""
    stage = ["review"]
    server = _Proxy(upstream, tape, stage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Proxy(f"http://{host!s}:{port}", stage)
    finally:
        server.shutdown()
        server.server_close()
        server.client.close()
