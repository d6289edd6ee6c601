"""What publishing reads from and writes to a pull/merge request, platform-neutral.

A platform client (`reviewflow.publish.client.PlatformClient`) turns a platform's API into
these records; the publisher (`reviewflow.publish.publisher`) decides from them alone, so
every decision is tested without a network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RequestRef(_Record):
    """Which pull/merge request: never a token.

    `repo` is `OWNER/NAME` on GitHub and the project's path or numeric ID on GitLab;
    `api_url` the API's base (`https://api.github.com`, `https://gitlab.example.com/api/v4`).
    `platform` is a platform's name in the registry (`reviewflow.platforms`).
    """

    platform: str = Field(pattern=r"^[a-z][a-z0-9-]{1,30}$")
    repo: str
    number: int
    api_url: str


class EventShas(_Record):
    """The base and head the CI event names (they match the checkout), when it names them."""

    base: str | None = None
    head: str | None = None


class RequestInfo(_Record):
    """The request as the platform describes it now."""

    base_sha: str  # GitHub: the base branch's tip; GitLab: diff_refs.base_sha (the merge base)
    head_sha: str
    start_sha: str  # GitLab: diff_refs.start_sha (the target's tip); GitHub: same as base_sha
    web_url: str
    base_ref: str = ""  # the target branch's name
    head_ref: str = ""


class PostedComment(_Record):
    """One comment (note) of a thread, oldest first."""

    id: str
    body: str
    author: str = ""


class Thread(_Record):
    """A review thread (GitHub) or a diff discussion (GitLab) on the request.

    `comments[0]` is the thread's first comment: reviewflow's own threads carry their finding's
    fingerprint in it (`markers.finding_marker`). `resolved_by` is the login that resolved it
    ("" when unknown or not resolved).
    """

    id: str
    path: str
    resolved: bool
    resolved_by: str = ""
    comments: tuple[PostedComment, ...] = ()


class SummaryNote(_Record):
    """A top-level comment (GitHub issue comment, GitLab MR note)."""

    id: str
    body: str


class NewComment(_Record):
    """A finding's comment to post on new-side lines `start_line..end_line` of `path`."""

    fingerprint: str
    path: str
    old_path: str
    start_line: int
    end_line: int
    body: str
    end_length: int = 0  # characters on line `end_line` (Azure DevOps highlights through them)


class RequestState(_Record):
    """Everything publishing reads before it decides."""

    info: RequestInfo
    threads: tuple[Thread, ...] = ()
    notes: tuple[SummaryNote, ...] = ()


class PublishResult(_Record):
    """What one publishing did, for the console line and the bench."""

    url: str
    posted: int = 0
    already_posted: int = 0
    resolved: int = 0
    dismissed: int = 0
    not_on_diff: int = 0
    open: int = 0  # the request's open findings after this run (this run's and carried ones)
    summary: str = "created"  # or "edited"
    calls: int = 0
