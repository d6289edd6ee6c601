"""Gitea's and Forgejo's REST API v1 as `GiteaClient` (`client.py`) uses it: one `httpx` client,
small pydantic models of the fields read, page-by-page listing and every failure as a
`reviewflow.errors` type (`client.py` states the contract).

Why not a client library: py-gitea 0.3.x needs Python 3.13 (0.2.x has no pull request reviews),
forgejo 1.0.0 needs Python 3.12 and is async only, and pyforgejo 2.0.7 (generated from
Forgejo's spec) has no review comment resolve/reply endpoints (Gitea 1.26+/1.27+), pages no
review comments and pulls in python-dotenv; a dozen REST calls are simpler than any of them.

Nothing retries or sleeps here (the publishing task's Prefect retries do); the token is sent as
`Authorization: token …` and never appears in a message.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.publish.sessions import no_answer
from reviewflow.publish.waits import retry_wait
from reviewflow.pullrequest.models import RequestRef

PAGE = 50
"""Items a page: Gitea's `[api] MAX_RESPONSE_ITEMS` default (it answers at most that many)."""
TOKEN_REFUSED = (
    "the Gitea token was refused (HTTP 401): it needs the write:repository and write:issue scopes"
)
DETAIL_CHARS = 200

T = TypeVar("T", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_Model):
    login: str = ""


class Branch(_Model):
    ref: str = ""
    sha: str = ""


class Pull(_Model):
    number: int
    html_url: str = ""
    base: Branch
    head: Branch
    merge_base: str = ""


class Review(_Model):
    id: int
    state: str = ""
    comments_count: int = 0
    user: User | None = None


class ReviewComment(_Model):
    """`position`: the new-side line (0 for an old-side comment, then `original_position`)."""

    id: int
    body: str = ""
    path: str = ""
    position: int = 0
    original_position: int = 0
    pull_request_review_id: int = 0
    user: User | None = None
    resolver: User | None = None


class IssueComment(_Model):
    id: int
    body: str = ""
    user: User | None = None


def login(user: User | None) -> str:
    return user.login if user is not None else ""


class GiteaApi:
    """HTTP to one Gitea/Forgejo instance's API v1 (`ref.api_url`, e.g. `https://host/api/v1`)."""

    def __init__(self, ref: RequestRef, token: str, timeout: float) -> None:
        self.calls = 0
        self._ref = ref
        self._token = token
        self._http = httpx.Client(
            base_url=ref.api_url.rstrip("/"),
            headers={"Authorization": f"token {token}", "Accept": "application/json"},
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            verify=_tls_context(),
            event_hooks={"request": [self._count]},
        )

    def _count(self, request: httpx.Request) -> None:
        self.calls += 1

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        action: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        reading: bool = False,
        accept: tuple[int, ...] = (),
    ) -> httpx.Response:
        """One request; a status in `accept` is returned as is, any other failure raised."""
        try:
            response = self._http.request(method, path, json=json, params=params)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as err:
            raise PublishSetupError(
                f"Gitea's API URL {self._ref.api_url!r} cannot be used ({self._scrub(err)})"
            ) from None
        except httpx.TimeoutException:
            raise TransientPublishError(
                f"Gitea did not answer {action} on {self._where()} in time"
            ) from None
        except httpx.HTTPError as err:  # connection refused, reset, DNS
            raise TransientPublishError(
                f"could not reach Gitea at {self._ref.api_url} while {action}: {no_answer(err)}"
            ) from None
        if response.is_success or response.status_code in accept:
            return response
        raise self._failure(response, action, reading)

    def parsed(self, model: type[T], response: httpx.Response, action: str) -> T:
        return self._parse(TypeAdapter(model), response, action)

    def parsed_list(self, model: type[T], response: httpx.Response, action: str) -> list[T]:
        return self._parse(TypeAdapter(list[model]), response, action)  # type: ignore[valid-type]

    def pages(self, model: type[T], path: str, action: str) -> Iterator[T]:
        """Every item of a listing, `PAGE` a request: while a `Link` header names a `next` page,
        else while `X-Total-Count` counts more than the pages read hold, else while pages come
        back full. Gitea's and Forgejo's review listing sends only `X-Total-Count` (and counts
        others' pending reviews it does not show), and a server may answer fewer than `PAGE`
        a page (`[api] MAX_RESPONSE_ITEMS`), so neither a short page nor `PAGE` ends it."""
        page, size = 1, 0
        while True:
            params = {"page": page, "limit": PAGE}
            response = self.call("GET", path, action, params=params, reading=True)
            items = self.parsed_list(model, response, action)
            yield from items
            size = max(size, len(items))  # the server's page size, or less
            following = _following(response, page, size, len(items))
            if following is None:
                return
            page = following

    def _parse(self, adapter: TypeAdapter[Any], response: httpx.Response, action: str) -> Any:
        try:
            return adapter.validate_json(response.content)
        except ValidationError as err:
            where = ".".join(str(p) for p in err.errors()[0]["loc"]) if err.errors() else "body"
            raise PublishError(
                f"Gitea's answer to {action} is not its API's ({where or 'body'}): check the "
                "API URL (it ends in /api/v1)"
            ) from None

    def _failure(self, response: httpx.Response, action: str, reading: bool) -> PublishError:
        status = response.status_code
        detail = self._scrub(_message(response))
        where = self._where()
        if status == 401:
            return TokenRefused(TOKEN_REFUSED)
        if status == 429:
            wait_s = retry_wait(response.headers, time.time())
            return TransientPublishError(
                f"Gitea rate-limited {action} on {where} (HTTP 429): retry in {wait_s:.0f} s",
                wait_s,
            )
        if status >= 500:
            return TransientPublishError(
                f"Gitea failed {action} on {where} (HTTP {status}): {detail}"
            )
        if status == 404 and reading:
            return PublishSetupError(
                f"Gitea found no pull request {where} at {self._ref.api_url} (HTTP 404): check "
                "the repository, the number and that the token can read the repository"
            )
        if status == 403 and not reading:
            return PublishRefused(
                f"Gitea refused {action} on {where} (HTTP 403: {detail}): the token lacks the "
                "permission (a fork's pull request gets a read-only token)"
            )
        kind = PublishSetupError if reading else PublishRefused
        return kind(f"Gitea refused {action} on {where} (HTTP {status}): {detail}")

    def _where(self) -> str:
        return f"{self._ref.repo}#{self._ref.number}"

    def _scrub(self, text: object) -> str:
        value = " ".join(str(text).split())
        return value.replace(self._token, "[REDACTED]") if self._token else value


def _message(response: httpx.Response) -> str:
    """Gitea's `message` (its APIError body), else the body's first characters."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("message"):
        text = str(data["message"])
    else:
        text = response.text or response.reason_phrase or "no message"
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def _following(response: httpx.Response, page: int, size: int, got: int) -> int | None:
    """The page to read after `page` (`got` items; `size` the most a page held, PAGE taken
    while none held any), or None: never past the page `X-Total-Count` ends in."""
    if "Link" in response.headers:  # a listing that links its pages: the link decides
        following = _next_page(response)
        return following if following is not None and following > page else None
    total = _total(response)
    if total is None:
        return page + 1 if got >= PAGE else None
    return page + 1 if page * (size or PAGE) < total else None


def _next_page(response: httpx.Response) -> int | None:
    """The `page` of the `Link` header's `rel="next"` URL (a server that links its pages
    sends one while more remain)."""
    for link in response.headers.get("Link", "").split(","):
        url, _, rel = link.partition(";")
        if 'rel="next"' in rel:
            page = httpx.URL(url.strip().strip("<>")).params.get("page", "")
            return int(page) if page.isdigit() else None
    return None


def _total(response: httpx.Response) -> int | None:
    """`X-Total-Count`: the items the listing holds (Gitea's `SetTotalCountHeader`)."""
    value = response.headers.get("X-Total-Count", "").strip()
    return int(value) if value.isdigit() else None


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per `SSL_CERT_FILE`/`SSL_CERT_DIR` (building one
    loads the CA bundle: ~40 ms, for every operation's client otherwise)."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # reads the two variables itself
