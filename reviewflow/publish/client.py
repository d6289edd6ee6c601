"""The operations publishing needs from a platform: each platform's client implements them
(each platform's package here, `github/`, `gitlab/`, `bitbucket/`, `gitea/`, `azure_devops/`,
or an installed plugin's; its spec in the registry, `reviewflow.platforms`, names it).

Errors are typed (`reviewflow.errors`): `TokenRefused` (a `PublishSetupError`) for a token the
platform refuses (401), `PublishSetupError` for a request it cannot find (404) while reading;
`PublishRefused` for a write refused for good (403 without a rate limit);
`TransientPublishError` for 5xx, connection failures and rate limits (403/429 with `retry-after`
or `x-ratelimit-remaining: 0`; `wait_s` from `retry-after` or `x-ratelimit-reset`). Nothing
retries or sleeps inside a client: the publishing task's Prefect retries do. A token never
appears in an error's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reviewflow.pullrequest.models import NewComment, RequestInfo, RequestState, SummaryNote, Thread


class PlatformClient(Protocol):
    calls: int
    """API requests made so far (REST and GraphQL alike), for the bench."""

    def read(self) -> RequestState:
        """The request, its review threads / diff discussions, and its top-level notes."""
        ...

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """Post `comments` on the diff of `info.head_sha`: GitHub one review (event COMMENT,
        line/start_line, side RIGHT) per batch of at most 50; GitLab one discussion each with a
        text position from `info`'s SHAs. A comment the platform refuses for its position
        (GitHub 422, GitLab 400 on the position) is skipped; returns the fingerprints skipped."""
        ...

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in `thread`, then resolve it."""
        ...

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit `note` in place to `body`, or create a new top-level note when None."""
        ...
