"""The token a review publishes with, held for that review only: `holding` puts it in the
review's context (the CLI's or the deployed flow's `publishing` block, which encloses the whole
flow run), and the publishing task, which runs in that context, takes it from there
(`client_for`). It is never a flow parameter, a task input, a cache key, a result or module
state: the context variable is only the way in, set and reset by the block that owns the token,
and invisible to anything running outside it (another review in this process, say). The token is
read from the environment or a Secret block before the review: the CLI then removes the token
variables from its environment, so nothing the review starts inherits them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from pydantic import SecretStr

from reviewflow.errors import PublishSetupError
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.platforms import spec_of
from reviewflow.pullrequest.models import RequestRef

TIMEOUT_S = 30.0


@dataclass(frozen=True, repr=False)
class HeldToken:
    """The token to publish to `ref` with (its repr shows no token)."""

    ref: RequestRef
    token: SecretStr

    def __repr__(self) -> str:
        return f"HeldToken({self.ref.repo}#{self.ref.number})"


_HELD: ContextVar[HeldToken | None] = ContextVar("reviewflow_publishing_token", default=None)


@contextlib.contextmanager
def holding(ref: RequestRef, token: SecretStr) -> Iterator[None]:
    """`token` is the one to publish to `ref` with, in this context, until the block ends."""
    mark = _HELD.set(HeldToken(ref, token))
    try:
        yield
    finally:
        _HELD.reset(mark)


def client_for(ref: RequestRef, token: SecretStr | None = None) -> PlatformClient:
    """A client of `ref`'s platform with `token`, else the token held for `ref` here."""
    if token is None:
        held = _HELD.get()
        token = held.token if held is not None and held.ref == ref else None
    if token is None:
        raise PublishSetupError(
            f"no {ref.platform} token held for {ref.repo}#{ref.number} in this review"
        )
    return spec_of(ref.platform).make_client(ref, token.get_secret_value(), TIMEOUT_S)
