"""Bitbucket Data Center (Server) pull requests through atlassian-python-api's `Bitbucket`
(REST API 1.0): file comments and their replies, thread resolution, the summary comment.

`ref.repo` is `PROJECT_KEY/REPO_SLUG` (a personal repository: `~USER/REPO_SLUG`), `ref.number`
the pull request's ID, `ref.api_url` the server's base URL with its context path
(`https://bitbucket.example.com/bitbucket`), with or without a trailing `/rest/api/1.0`. The
token is an HTTP access token sent as `Authorization: Bearer`. Nothing here reads
`ref.platform`.

The library's own waiting is off: `backoff_and_retry=False` and `retry_with_header=False` (on
by default, it sleeps on a 429's `Retry-After` and sends again). `_Session` counts every request
sent. Its `HTTPError`s become reviewflow's (`client.py`): 401 while reading is a token Bitbucket
refuses; 401 or 403 on a write is a token without "Repository write" (Bitbucket answers 401 for
"insufficient permissions"), refused for good; 404 while reading a missing project, repository
or pull request; 429 and 5xx transient, 429 with `Retry-After`'s wait; 409 on an edit (a stale
comment `version`) transient, so the retry reads the new version.

One read is the pull request, its merge base (`/merge-base`, Bitbucket 8.16+; the target's tip
on older servers) and its activities, paged with `start`/`limit` until `isLastPage`: each root
comment added (`COMMENTED`/`ADDED`) carries its replies nested in `comments`. A root with an
anchor is a thread (resolved: `threadResolved`, by `threadResolver`, or a resolved task); one
without is a summary note, as are its replies. Comment texts pass through
`dc_text.from_dc` on read and `to_dc` on write (markers Bitbucket never renders).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests
from atlassian.bitbucket import Bitbucket

from reviewflow.errors import PublishError, PublishRefused, PublishSetupError, TransientPublishError
from reviewflow.publish.bitbucket.dc_errors import (
    Attempt,
    about_anchor,
    detail_of,
    failure,
    status_of,
)
from reviewflow.publish.bitbucket.dc_text import (
    PullRequestDiff,
    anchor,
    from_dc,
    parse_diff,
    path_of,
    to_dc,
)
from reviewflow.publish.sessions import UNUSABLE_URL, CountingSession, unreachable
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

_MAX_PAGES = 1_000


def server_url(api_url: str) -> str:
    """The server's base URL (with its context path) from `api_url`, which may end in the
    REST API's root (`/rest/api/1.0`, `/rest/api/latest`)."""
    url = api_url.strip().rstrip("/")
    for suffix in ("/rest/api/1.0", "/rest/api/latest", "/rest/api"):
        url = url.removesuffix(suffix)
    return url


class BitbucketServerClient:
    """`PlatformClient` for one Bitbucket Data Center pull request."""

    def __init__(
        self, ref: RequestRef, token: str, timeout_s: float = 30.0, *, per_page: int = 100
    ) -> None:
        self.calls = 0
        self._ref = ref
        self._token = token
        self._per_page = per_page
        self._versions: dict[str, int] = {}  # comment ID -> version, from the last read
        self._bb = Bitbucket(
            server_url(ref.api_url),
            token=token,
            timeout=max(1, math.ceil(timeout_s)),
            cloud=False,
            api_version="1.0",
            backoff_and_retry=False,
            retry_with_header=False,
            session=CountingSession(self._sent),
        )
        self._bb.timeout = timeout_s  # type: ignore[assignment]  # the library keeps int(timeout)
        project, _, slug = ref.repo.partition("/")
        self._pr = (
            f"rest/api/1.0/projects/{quote(project, safe='~')}/repos/{quote(slug, safe='')}"
            f"/pull-requests/{ref.number}"
        )

    def _sent(self) -> None:
        self.calls += 1

    def read(self) -> RequestState:
        """The pull request, its comment threads and its general comments."""
        with self._translated("reading the pull request", reading=True):
            pr = self._json(self._bb.get(self._pr))
            base = self._merge_base() or _latest(pr, "toRef")
            activities = list(self._activities())
        info = self._info(pr, base)
        roots = _root_comments(activities)
        self._versions = {}
        threads: list[Thread] = []
        notes: list[SummaryNote] = []
        for root, anchor_json in roots:
            tree = self._flatten(root)
            if anchor_json:
                threads.append(_thread(root, anchor_json, tree))
            else:
                notes.extend(SummaryNote(id=str(c["id"]), body=_text(c)) for c in tree)
        return RequestState(info=info, threads=tuple(threads), notes=tuple(notes))

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One file comment each on the pull request's diff; the fingerprints of those whose
        line is not a line of that diff, or whose diff has moved past `info.head_sha`."""
        diff = self._diff()
        if diff.to_hash and diff.to_hash != info.head_sha:
            return [c.fingerprint for c in comments]  # a push since the read: next run's
        skipped: list[str] = []
        for comment in comments:
            where = anchor(comment, diff, info.head_sha)
            if where is None or not self._comment(comment, where):
                skipped.append(comment.fingerprint)
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in the thread, then mark the thread resolved (`threadResolved` on its
        root comment, with the root's current version)."""
        with self._translated("replying in a comment thread"):
            body = {"text": to_dc(reply), "parent": {"id": int(thread.id)}}
            self._bb.post(f"{self._pr}/comments", data=body)
        with self._translated("resolving a comment thread", conflict_transient=True):
            version = self._version(thread.id, fresh=True)
            update = {"version": version, "threadResolved": True}
            self._bb.put(f"{self._pr}/comments/{thread.id}", data=update)

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the general comment `note` in place, or add one."""
        if note is None:
            with self._translated("writing the summary comment"):
                self._bb.post(f"{self._pr}/comments", data={"text": to_dc(body)})
            return
        with self._translated("editing the summary comment", conflict_transient=True):
            update = {"version": self._version(note.id), "text": to_dc(body)}
            self._bb.put(f"{self._pr}/comments/{note.id}", data=update)

    def _activities(self) -> Iterator[Mapping[str, Any]]:
        start = 0
        for _ in range(_MAX_PAGES):
            page = self._json(
                self._bb.get(
                    f"{self._pr}/activities", params={"start": start, "limit": self._per_page}
                )
            )
            yield from (v for v in page.get("values") or [] if isinstance(v, Mapping))
            following = page.get("nextPageStart")
            if page.get("isLastPage", True) or not isinstance(following, int):
                return
            start = following

    def _merge_base(self) -> str:
        """The merge base's SHA ("" when the server has no such resource or no common
        ancestor: a 204, or a 404 before Bitbucket 8.16 once the pull request was found)."""
        response = self._bb.get(f"{self._pr}/merge-base", advanced_mode=True)
        if response.status_code in (204, 404):
            return ""
        self._bb.raise_for_status(response)
        answer = self._bb._response_handler(response)
        return str(answer.get("id") or "") if isinstance(answer, Mapping) else ""

    def _diff(self) -> PullRequestDiff:
        with self._translated("reading the pull request's diff", reading=True):
            answer = self._json(self._bb.get(f"{self._pr}/diff", params={"withComments": "false"}))
        return parse_diff(answer)

    def _comment(self, comment: NewComment, where: Mapping[str, Any]) -> bool:
        """Add `comment` at `where`: False when Bitbucket refuses its anchor (HTTP 400)."""
        with self._translated(f"posting a comment on {comment.path}"):
            try:
                self._bb.post(
                    f"{self._pr}/comments", data={"text": to_dc(comment.body), "anchor": where}
                )
            except requests.HTTPError as err:
                if status_of(err) == 400 and about_anchor(detail_of(err)):
                    return False
                raise
        return True

    def _version(self, comment_id: str, *, fresh: bool = False) -> int:
        """A comment's version: from the last read, or read now (`fresh`: always)."""
        if fresh or comment_id not in self._versions:
            answer = self._json(self._bb.get(f"{self._pr}/comments/{comment_id}"))
            self._versions[comment_id] = int(answer.get("version") or 0)
        return self._versions[comment_id]

    def _flatten(self, root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """A root comment and its replies (nested in `comments`), oldest first; each one's
        version kept for a later edit."""
        out: list[Mapping[str, Any]] = []
        stack = [root]
        while stack:
            comment = stack.pop()
            out.append(comment)
            self._versions[str(comment["id"])] = int(comment.get("version") or 0)
            stack.extend(c for c in comment.get("comments") or [] if isinstance(c, Mapping))
        return [root, *sorted(out[1:], key=lambda c: int(c["id"]))]

    def _info(self, pr: Mapping[str, Any], base: str) -> RequestInfo:
        head, target = _latest(pr, "fromRef"), _latest(pr, "toRef")
        if not head or not target:
            raise PublishSetupError(
                f"{self._what()}: Bitbucket's answer names no source or target commit"
            )
        links = (pr.get("links") or {}).get("self") or [{}]
        return RequestInfo(
            base_sha=base or target,
            head_sha=head,
            start_sha=target,
            web_url=str(links[0].get("href") or "") if isinstance(links[0], Mapping) else "",
            base_ref=str((pr.get("toRef") or {}).get("displayId") or ""),
            head_ref=str((pr.get("fromRef") or {}).get("displayId") or ""),
        )

    def _json(self, answer: object) -> Mapping[str, Any]:
        if not isinstance(answer, Mapping):
            raise _NotTheApi()
        return answer

    @contextmanager
    def _translated(
        self, action: str, *, reading: bool = False, conflict_transient: bool = False
    ) -> Iterator[None]:
        """The library's and requests' errors as reviewflow's (`client.py`), without the token."""
        try:
            yield
        except requests.HTTPError as err:
            raise self._failure(err, action, reading, conflict_transient) from None
        except _NotTheApi:
            message = (
                f"Bitbucket's answer to {action} is not its REST API's: check --api-url"
                f" ({server_url(self._ref.api_url)}), with the server's context path"
            )
            raise (PublishSetupError(message) if reading else PublishRefused(message)) from None
        except UNUSABLE_URL as err:
            detail = self._scrub(str(err))
            raise PublishSetupError(f"Bitbucket's API URL cannot be used ({detail})") from None
        except requests.RequestException as err:  # connection failures, timeouts
            raise TransientPublishError(
                f"Bitbucket could not be reached ({action}): {unreachable(err)}"
            ) from None

    def _failure(
        self, err: requests.HTTPError, action: str, reading: bool, conflict_transient: bool
    ) -> PublishError:
        return failure(
            err,
            Attempt(action, self._what(), server_url(self._ref.api_url), reading),
            conflict_transient=conflict_transient,
            scrub=self._scrub,
        )

    def _what(self) -> str:
        return f"pull request #{self._ref.number} of Bitbucket repository {self._ref.repo!r}"

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "[token]") if self._token else text


class _NotTheApi(Exception):
    """An answer that is not the REST API's JSON (a login page, a proxy's error)."""


def _root_comments(
    activities: Sequence[Mapping[str, Any]],
) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
    """Each root comment once, oldest first, with its anchor (None: a general comment)."""
    roots: dict[int, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
    for activity in activities:
        comment = activity.get("comment")
        if activity.get("action") != "COMMENTED" or not isinstance(comment, Mapping):
            continue
        if activity.get("commentAction") not in (None, "ADDED") or comment.get("parent"):
            continue
        anchor_json = activity.get("commentAnchor") or comment.get("anchor")
        roots.setdefault(int(comment["id"]), (comment, anchor_json or None))
    return [roots[key] for key in sorted(roots)]


def _thread(
    root: Mapping[str, Any], anchor_json: Mapping[str, Any], tree: Sequence[Mapping[str, Any]]
) -> Thread:
    resolved = bool(root.get("threadResolved")) or root.get("state") == "RESOLVED"
    resolver = root.get("threadResolver") or root.get("resolver") or {}
    return Thread(
        id=str(root["id"]),
        path=_anchor_path(anchor_json),
        resolved=resolved,
        resolved_by=_user(resolver) if resolved else "",
        comments=tuple(
            PostedComment(id=str(c["id"]), body=_text(c), author=_user(c.get("author")))
            for c in tree
        ),
    )


def _anchor_path(anchor_json: Mapping[str, Any]) -> str:
    return path_of(anchor_json.get("path")) or path_of(anchor_json.get("srcPath"))


def _text(comment: Mapping[str, Any]) -> str:
    return from_dc(str(comment.get("text") or ""))


def _user(user: object) -> str:
    if not isinstance(user, Mapping):
        return ""
    return str(user.get("name") or user.get("slug") or "")


def _latest(pr: Mapping[str, Any], side: str) -> str:
    ref = pr.get(side)
    return str(ref.get("latestCommit") or "") if isinstance(ref, Mapping) else ""
