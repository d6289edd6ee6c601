"""The HTTP side of the Azure DevOps client: azure-devops' `GitClient` set up never to retry,
wait or cache on disk, every request counted, the last response kept (its status and headers:
the library's errors carry neither), and its errors turned into reviewflow's (`client.py`),
without the token.

Azure DevOps answers a token it refuses with 401 (reviewflow sends `X-TFS-FedAuthRedirect:
Suppress`, as the library does) or, on some hosts, with a 203 and an HTML sign-in page: both
are the token refused. A rate limit is a 429, or any answer with `Retry-After`; the wait is
`Retry-After`, else `X-RateLimit-Reset` (epoch seconds), as Azure DevOps' rate limit docs name
them."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AZURE_DEVOPS_CACHE_DIR", tempfile.gettempdir())  # nothing created

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests
from azure.devops import _file_cache
from azure.devops.client import Client
from azure.devops.exceptions import AzureDevOpsAuthenticationError
from azure.devops.v7_1.git import models
from azure.devops.v7_1.git.git_client import GitClient
from msrest.authentication import BasicAuthentication
from msrest.exceptions import ClientException, DeserializationError
from urllib3.util.retry import Retry

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.publish.azure_devops.target import split_repo
from reviewflow.publish.sessions import UNUSABLE_URL, unreachable
from reviewflow.publish.waits import retry_wait
from reviewflow.pullrequest.models import RequestRef

__all__ = ["TOKEN_REFUSED", "Wire", "models"]

TOKEN_REFUSED = (
    "the Azure DevOps token was refused (HTTP 401): it needs to contribute to pull requests"
)
_DETAIL_CHARS = 300
_NEVER = Retry(total=0, connect=0, read=0, redirect=0, status=0, respect_retry_after_header=False)


class _Forgetful(dict[str, Any]):
    """A cache that keeps nothing: azure-devops' file caches, off."""

    def __setitem__(self, key: str, value: Any) -> None:
        pass

    def setdefault(self, key: str, default: Any = None) -> Any:
        return {}


for _cache in (_file_cache.OPTIONS_CACHE, _file_cache.RESOURCE_CACHE):
    _cache.file_name = ""
    _cache.data = _Forgetful()
    _cache.initial_load_occurred = True


class Wire:
    """One pull request's `GitClient`, its request count and its last response."""

    def __init__(self, ref: RequestRef, token: str, timeout: float) -> None:
        self.ref = ref
        self.project, self.repo = split_repo(ref.repo)
        self.calls = 0
        self.last: requests.Response | None = None
        self._token = token
        self.collection = ref.api_url.strip().rstrip("/")
        git = GitClient(base_url=self.collection, creds=BasicAuthentication("", token))
        config = git.config
        config.retry_policy.policy = _NEVER
        config.redirect_policy.allow = False  # a redirect is a sign-in page or a wrong URL
        config.connection.timeout = timeout
        config.hooks.append(self._answered)
        config.session_configuration_callback = self._sending
        Client._locations_cache.pop(git.normalized_url, None)  # asked once per client
        self.git = git

    @property
    def what(self) -> str:
        return f"pull request !{self.ref.number} of {self.project}/{self.repo}"

    def web_url(self) -> str:
        return f"{self.collection}/{quote(self.project)}/_git/{quote(self.repo)}"

    def last_json(self) -> dict[str, Any]:
        try:
            data = self.last.json() if self.last is not None else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _sending(
        self, session: requests.Session, config: Any, local: Any, **kwargs: Any
    ) -> dict[str, Any]:
        """Before each request: counted, and its session's adapters never retry (msrest set
        its own policy, three retries with backoff on 429 and 5xx, when it made the session)."""
        for adapter in session.adapters.values():
            adapter.max_retries = _NEVER  # type: ignore[attr-defined]
        self.calls += 1
        self.last = None
        return kwargs

    def _answered(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.last = response
        if response.status_code == 203:  # a sign-in page instead of the API's answer
            raise TokenRefused(TOKEN_REFUSED.replace("HTTP 401", "HTTP 203, a sign-in page"))

    @contextmanager
    def translated(self, action: str, *, reading: bool = False) -> Iterator[None]:
        """The library's errors as reviewflow's, without the token."""
        try:
            yield
        except PublishError:
            raise
        except AzureDevOpsAuthenticationError:
            raise TokenRefused(TOKEN_REFUSED) from None
        except (ClientException, DeserializationError, ValueError) as err:
            raise self._failure(err, action, reading) from None
        except requests.RequestException as err:
            raise self._unreachable(err, action) from None

    def _failure(self, err: Exception, action: str, reading: bool) -> PublishError:
        inner = getattr(err, "inner_exception", None)
        if self.last is None and isinstance(inner, requests.RequestException):
            return self._unreachable(inner, action)
        if self.last is None:  # the library refused before sending: a location it lacks
            message = f"Azure DevOps at {self.collection} cannot serve {action}: {err}"
            return PublishSetupError(self._scrub(message))
        code = self.last.status_code
        detail = self._scrub(_detail(err))
        headers = self.last.headers
        if code == 401:
            return TokenRefused(TOKEN_REFUSED)
        if code == 429 or "Retry-After" in headers:
            wait_s = retry_wait(headers, time.time(), reset="X-RateLimit-Reset")
            return TransientPublishError(
                f"Azure DevOps rate-limited {action} (HTTP {code}): retry in {wait_s:.0f} s", wait_s
            )
        if code >= 500:
            return TransientPublishError(f"Azure DevOps failed {action} (HTTP {code}: {detail})")
        if code == 404 and reading:
            return PublishSetupError(self._not_found(detail))
        if code < 400 or isinstance(err, DeserializationError):
            message = (
                f"Azure DevOps's answer to {action} is not its API's (HTTP {code}): check the"
                f" collection URL {self.collection}"
            )
            return PublishSetupError(message) if reading else PublishRefused(message)
        if code == 403:
            return PublishRefused(
                f"Azure DevOps refused {action} on {self.what} (HTTP 403: {detail}): the token"
                " lacks 'Contribute to pull requests' (a fork's build or a read-only token)"
            )
        return PublishRefused(f"Azure DevOps refused {action} (HTTP {code}: {detail})")

    def _unreachable(self, err: requests.RequestException, action: str) -> PublishError:
        if isinstance(err, UNUSABLE_URL):
            detail = self._scrub(str(err))
            return PublishSetupError(f"Azure DevOps's collection URL cannot be used ({detail})")
        return TransientPublishError(
            f"Azure DevOps could not be reached ({action}): {unreachable(err)}"
        )

    def _not_found(self, detail: str) -> str:
        lowered = detail.lower()
        if "tf200016" in lowered or "project" in lowered:
            return (
                f"Azure DevOps project {self.project!r} was not found at {self.collection}"
                " (HTTP 404): check SYSTEM_TEAMPROJECT or --platform-repo, and the --api-url"
            )
        if "tf401019" in lowered or "repository" in lowered:
            return (
                f"Azure DevOps repository {self.repo!r} was not found in project"
                f" {self.project!r} (HTTP 404): check BUILD_REPOSITORY_NAME or --platform-repo,"
                " and that the token can read it"
            )
        return (
            f"{self.what} was not found at {self.collection} (HTTP 404): check the number"
            " (--pull-request, or SYSTEM_PULLREQUEST_PULLREQUESTID in Azure Pipelines) and that"
            " --api-url is the collection (https://dev.azure.com/ORG)"
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "[token]") if self._token else text


def _detail(err: Exception) -> str:
    text = " ".join(str(getattr(err, "message", None) or err).split())
    return text[:_DETAIL_CHARS] or type(err).__name__
