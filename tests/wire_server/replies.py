"""The script vocabulary of the wire server: replies, usage and recorded requests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROTOCOLS = ("openai", "anthropic", "gemini")
TEST_KEY = "sk-wire-test-Zq9VXk2LmP4sT7uY"


@dataclass(frozen=True)
class WireUsage:
    """Usage to report. For Anthropic, `prompt` is `input_tokens` (the uncached part)."""

    prompt: int = 12
    completion: int = 7
    total: int | None = None
    cache_read: int = 0
    cache_write: int = 0


class _AutoId:
    def __repr__(self) -> str:
        return "AUTO_ID"


AUTO_ID: Any = _AutoId()


@dataclass(frozen=True)
class Call:
    """One tool call. A `str` `arguments` is sent as raw text (malformed JSON welcome);
    `id=None` omits the ID (Gemini), `AUTO_ID` makes one up; `signature` is Gemini's
    base64 `thoughtSignature`."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = AUTO_ID
    signature: str | None = None


class ToolCalls:
    """A reply holding one or several tool calls (and optional text)."""

    def __init__(self, *calls: Call, text: str = "", usage: WireUsage | None = None) -> None:
        self.calls = calls
        self.text = text
        self.usage = usage or WireUsage()


@dataclass(frozen=True)
class Text:
    text: str = "ok"
    usage: WireUsage = field(default_factory=WireUsage)


@dataclass(frozen=True)
class HttpError:
    """An HTTP error; `body=None` sends the protocol's error shape echoing the credential."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` (cut short when the server stops), then answer with `then`."""

    seconds: float
    then: Any = field(default_factory=Text)


@dataclass(frozen=True)
class Disconnect:
    """Close the connection without answering."""


@dataclass(frozen=True)
class Empty:
    """A well-formed answer with nothing in it (no choices / content / candidates)."""

    usage: WireUsage = field(default_factory=WireUsage)


@dataclass(frozen=True)
class Raw:
    """A verbatim answer: `bytes` or `str` bodies are sent as they are, anything else as JSON."""

    status: int
    body: Any
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Trickle:
    """Send the headers at once, then the body of `then` one padding byte every `interval`
    seconds for `seconds` (cut short when the server stops or the client hangs up)."""

    seconds: float
    interval: float = 0.3
    then: Any = field(default_factory=Text)


Reply = ToolCalls | Text | HttpError | Delay | Disconnect | Empty | Raw | Trickle


@dataclass(frozen=True)
class RecordedRequest:
    """One request. `platform`: direct, bedrock, vertex or azure, told by its path; `query`
    the URL's query string; `raw` the body's bytes (a SigV4 signature covers them)."""

    protocol: str
    path: str
    headers: dict[str, str]
    body: Any
    model: str
    platform: str = "direct"
    query: str = ""
    raw: bytes = b""

    @property
    def credential(self) -> str:
        """The credential as the SDK sent it (bearer token, x-api-key, x-goog-api-key, Azure's
        api-key, or a whole SigV4 Authorization header)."""
        auth = self.headers.get("authorization", "")
        return (
            auth.removeprefix("Bearer ")
            or self.headers.get("x-api-key", "")
            or self.headers.get("x-goog-api-key", "")
            or self.headers.get("api-key", "")
        )
