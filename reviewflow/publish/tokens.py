"""The platform tokens of this process, by request: the publishing task finds its token here,
so a token is never a flow parameter, a task input, a cache key or a result."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from pydantic import SecretStr

from reviewflow.errors import PublishSetupError
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.platforms import spec_of
from reviewflow.pullrequest.models import RequestRef

_TOKENS: dict[tuple[str, str, str, int], SecretStr] = {}
_LOCK = threading.Lock()
TIMEOUT_S = 30.0


def _key(ref: RequestRef) -> tuple[str, str, str, int]:
    return (ref.platform, ref.api_url, ref.repo, ref.number)


@contextlib.contextmanager
def registered(ref: RequestRef, token: SecretStr) -> Iterator[None]:
    """`token` is the one to publish to `ref` with, until the block ends."""
    with _LOCK:
        _TOKENS[_key(ref)] = token
    try:
        yield
    finally:
        with _LOCK:
            _TOKENS.pop(_key(ref), None)


def client_for(ref: RequestRef, token: SecretStr | None = None) -> PlatformClient:
    """A client of `ref`'s platform with `token`, else the token registered for `ref`."""
    if token is None:
        with _LOCK:
            token = _TOKENS.get(_key(ref))
    if token is None:
        raise PublishSetupError(
            f"no {ref.platform} token in this process for {ref.repo}#{ref.number}"
        )
    return spec_of(ref.platform).make_client(ref, token.get_secret_value(), TIMEOUT_S)
