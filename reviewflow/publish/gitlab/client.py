"""GitLab merge requests through python-gitlab: diff discussions, their notes, the summary note.

python-gitlab's own waiting and retrying is off for every request (`_ONCE`): the publishing
task's Prefect retries decide. Its errors carry no response headers, so `_Session` keeps the last
response's headers (for `Retry-After` / `RateLimit-Reset`) and counts every request sent.

One listing of the discussions gives both the diff threads and the top-level notes: it holds
every note of the merge request. A top-level note is any note neither in a diff discussion nor a
system note; not only a discussion's single `individual_note` (a reply to the summary note turns
it into a thread, which must not hide it).

A multi-line finding is posted at its last line (`new_line = end_line`) with a `line_range`
from its first: each end's `line_code` needs the old-side numbers, read from the merge request's
diff (once, and only when a comment spans lines; `lines.py`). A range whose ends are not
both lines of the diff is left out: the comment then sits on its last line alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import gitlab
import requests
from gitlab.exceptions import GitlabCreateError, GitlabError, GitlabParsingError, RedirectError

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.publish.gitlab.lines import DiffLines, files_lines, line_range
from reviewflow.publish.sessions import UNUSABLE_URL, CountingSession, unreachable
from reviewflow.publish.waits import retry_wait
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

TOKEN_REFUSED = "the GitLab token was refused (HTTP 401): it needs the api scope"
_ONCE: dict[str, Any] = {
    "obey_rate_limit": False,
    "retry_transient_errors": False,
    "max_retries": 0,
}
_DIFF_PENDING_WAIT_S = 5.0
_DETAIL_CHARS = 300


def instance_url(api_url: str) -> str:
    """The instance URL python-gitlab wants, from the API v4 base (`CI_API_V4_URL`)."""
    url = api_url.strip().rstrip("/")
    return url.removesuffix("/api/v4")


class GitLabClient:
    """`PlatformClient` for one GitLab merge request (`ref.repo`: path or ID, `ref.number`: IID)."""

    def __init__(
        self, ref: RequestRef, token: str, timeout: float = 30.0, *, per_page: int = 100
    ) -> None:
        self.calls = 0
        self._ref = ref
        self._token = token
        self._per_page = per_page
        self._session = CountingSession(self._sent)
        self._gl = gitlab.Gitlab(
            instance_url(ref.api_url),
            private_token=token,
            timeout=timeout,
            retry_transient_errors=False,
            keep_base_url=True,  # follow pagination links on the URL we were given
            session=self._session,
        )
        project_id: int | str = int(ref.repo) if ref.repo.isdigit() else ref.repo
        self._mrs = self._gl.projects.get(project_id, lazy=True).mergerequests
        self._mr = self._mrs.get(ref.number, lazy=True)

    def _sent(self) -> None:
        self.calls += 1

    def read(self) -> RequestState:
        """The merge request, its diff discussions and its top-level notes."""
        with self._translated("reading the merge request", reading=True):
            mr = self._mrs.get(self._ref.number, **_ONCE)
            info = self._info(mr.asdict())
            listing = mr.discussions.list(get_all=True, per_page=self._per_page, **_ONCE)
        threads: list[Thread] = []
        notes: list[SummaryNote] = []
        for discussion in (item.asdict() for item in listing):
            raw = discussion.get("notes") or []
            if raw and raw[0].get("position"):
                threads.append(_thread(str(discussion["id"]), raw))
            else:
                notes.extend(_summary(note) for note in raw if not note.get("system"))
        return RequestState(info=info, threads=tuple(threads), notes=tuple(notes))

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One discussion per comment; the fingerprints of those GitLab refused for position."""
        skipped: list[str] = []
        ranged = any(c.start_line < c.end_line for c in comments)
        lines = self._diff_lines() if ranged else {}
        for comment in comments:
            if not self._discussion(info, comment, lines.get(comment.path, {})):
                skipped.append(comment.fingerprint)
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in the discussion, then resolve it."""
        discussion = self._mr.discussions.get(thread.id, lazy=True)
        with self._translated("replying in a discussion"):
            discussion.notes.create({"body": reply}, **_ONCE)
        with self._translated("resolving a discussion"):
            self._mr.discussions.update(thread.id, {"resolved": True}, **_ONCE)

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the merge request note `note` in place, or create one."""
        with self._translated("writing the summary note"):
            if note is None:
                self._mr.notes.create({"body": body}, **_ONCE)
            else:
                self._mr.notes.update(note.id, {"body": body}, **_ONCE)

    def _diff_lines(self) -> dict[str, DiffLines]:
        """The merge request's changed files, their new-side lines with old-side positions."""
        path = f"{self._mrs.path}/{self._ref.number}/diffs"
        with self._translated("reading the merge request's diff", reading=True):
            pages = self._gl.http_list(path, get_all=True, per_page=self._per_page, **_ONCE)
        return files_lines(d for d in pages if isinstance(d, dict))

    def _discussion(self, info: RequestInfo, comment: NewComment, lines: DiffLines) -> bool:
        """Start `comment`'s discussion: False when GitLab refuses its position."""
        position: dict[str, Any] = {
            "position_type": "text",
            "base_sha": info.base_sha,
            "start_sha": info.start_sha,
            "head_sha": info.head_sha,
            "new_path": comment.path,
            "old_path": comment.old_path or comment.path,
            "new_line": comment.end_line,
        }
        span = line_range(comment, lines)
        if span is not None:
            position["line_range"] = span
        with self._translated(f"posting a comment on {comment.path}"):
            try:
                self._mr.discussions.create({"body": comment.body, "position": position}, **_ONCE)
            except GitlabCreateError as err:
                if err.response_code == 400 and _about_position(err.error_message):
                    return False
                raise
        return True

    def _info(self, mr: Mapping[str, Any]) -> RequestInfo:
        refs = mr.get("diff_refs") or {}
        if not refs.get("head_sha") or not refs.get("base_sha"):
            raise TransientPublishError(
                f"GitLab has not computed the diff of {self._what()} yet", _DIFF_PENDING_WAIT_S
            )
        return RequestInfo(
            base_sha=refs["base_sha"],
            head_sha=refs["head_sha"],
            start_sha=refs.get("start_sha") or refs["base_sha"],
            web_url=str(mr.get("web_url") or ""),
            base_ref=str(mr.get("target_branch") or ""),
            head_ref=str(mr.get("source_branch") or ""),
        )

    @contextmanager
    def _translated(self, action: str, *, reading: bool = False) -> Iterator[None]:
        """python-gitlab's and requests' errors as reviewflow's (`client.py`), without the token."""
        try:
            yield
        except GitlabError as err:
            raise self._failure(err, action, reading) from None
        except UNUSABLE_URL as err:
            detail = self._scrub(str(err))
            raise PublishSetupError(f"GitLab's API URL cannot be used ({detail})") from None
        except requests.RequestException as err:  # connection failures, timeouts
            raise TransientPublishError(
                f"GitLab could not be reached ({action}): {unreachable(err)}"
            ) from None

    def _failure(self, err: GitlabError, action: str, reading: bool) -> PublishError:
        code = err.response_code
        detail = self._scrub(_detail(err))
        headers = self._session.last_headers
        if code == 401:
            return TokenRefused(TOKEN_REFUSED)
        if code == 429 or (code == 403 and _rate_limited(headers)):
            wait_s = retry_wait(headers, time.time(), reset="RateLimit-Reset")
            return TransientPublishError(
                f"GitLab rate-limited {action} (HTTP {code}): retry in {wait_s:.0f} s", wait_s
            )
        if code is not None and code >= 500:
            return TransientPublishError(f"GitLab failed {action} (HTTP {code}: {detail})")
        if code == 404 and reading:
            return PublishSetupError(self._not_found(detail))
        if isinstance(err, (GitlabParsingError, RedirectError)):
            message = f"GitLab's answer to {action} is not its API's: check the API URL ({detail})"
            return PublishSetupError(message) if reading else PublishRefused(message)
        if code == 403:
            return PublishRefused(
                f"GitLab refused {action} on {self._what()} (HTTP 403: {detail}): the token"
                " lacks the permission (a fork's or a job's token is read-only)"
            )
        return PublishRefused(f"GitLab refused {action} (HTTP {code}: {detail})")

    def _not_found(self, detail: str) -> str:
        where = instance_url(self._ref.api_url)
        if "project" in detail.lower():
            return (
                f"GitLab project {self._ref.repo!r} was not found at {where} (HTTP 404): check"
                " CI_PROJECT_ID or --platform-repo, and that the token can read the project"
            )
        return (
            f"{self._what()} was not found at {where} (HTTP 404): check CI_MERGE_REQUEST_IID"
            " or --pull-request"
        )

    def _what(self) -> str:
        return f"merge request !{self._ref.number} of GitLab project {self._ref.repo!r}"

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "[token]") if self._token else text


def _thread(discussion_id: str, raw: list[dict[str, Any]]) -> Thread:
    """A diff discussion: resolved when every resolvable note is; system notes left out."""
    position = raw[0]["position"]
    resolvable = [note for note in raw if note.get("resolvable")]
    resolved = bool(resolvable) and all(note.get("resolved") for note in resolvable)
    resolvers = [note.get("resolved_by") or {} for note in resolvable]
    resolved_by = next((str(r["username"]) for r in resolvers if r.get("username")), "")
    comments = tuple(
        PostedComment(
            id=str(note["id"]),
            body=str(note.get("body") or ""),
            author=str((note.get("author") or {}).get("username") or ""),
        )
        for note in raw
        if not note.get("system")
    )
    return Thread(
        id=discussion_id,
        path=str(position.get("new_path") or position.get("old_path") or ""),
        resolved=resolved,
        resolved_by=resolved_by if resolved else "",
        comments=comments,
    )


def _summary(note: Mapping[str, Any]) -> SummaryNote:
    return SummaryNote(id=str(note["id"]), body=str(note.get("body") or ""))


def _about_position(message: str) -> bool:
    lowered = message.lower()
    return "line_code" in lowered or "position" in lowered


def _detail(err: GitlabError) -> str:
    text = err.error_message
    detail = text if isinstance(text, str) else str(text)
    return " ".join(detail.split())[:_DETAIL_CHARS] or type(err).__name__


def _rate_limited(headers: Mapping[str, str]) -> bool:
    return "Retry-After" in headers or headers.get("RateLimit-Remaining") == "0"
