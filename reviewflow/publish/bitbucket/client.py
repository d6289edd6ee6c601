"""Bitbucket Cloud pull requests through atlassian-python-api: inline comments and their
replies, resolving threads, the summary comment; and `bitbucket_client`, the `--publish
bitbucket` factory choosing Bitbucket Cloud or Data Center by the API base.

The library's Cloud models parse every answer (`PullRequest`, `Comment`, `Commit`, with their
`type` checked) and page through the comments (`values` + `next`). They cannot post an inline
comment, reply in a thread, resolve one or edit a comment by its ID, and the objects they
create ask again on their own (`retry_with_header` sleeps on a 429), so every request goes
through one `PullRequests` object of the library's session layer (`get`/`post`/`put` with its
Cloud error handling), built here with its waiting and retrying off: the publishing task's
Prefect retries decide. `_Session` counts each request sent.

Bitbucket names a pull request's commits by 12-hex prefixes: both are expanded to full hashes
(`GET .../commit/{prefix}`, on the destination repository). Bitbucket Cloud does not refuse an
inline comment on a line outside the diff's hunks (its own UI comments on expanded context),
where the diff view would not show it: `post` reads the pull request's diff first and skips
such a comment, as GitHub's 422 does. A finding over several lines is posted with `start_to`
when both ends are lines of the diff, else on its last line alone. Markers and our templates'
HTML are translated both ways in `markup.py` (Bitbucket renders no HTML).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests
from atlassian.bitbucket.cloud.base import BitbucketCloudBase
from atlassian.bitbucket.cloud.common.comments import Comment
from atlassian.bitbucket.cloud.repositories.commits import Commit
from atlassian.bitbucket.cloud.repositories.pullRequests import PullRequest

from reviewflow.errors import PublishError, PublishSetupError
from reviewflow.git.parse import parse_unified_diff
from reviewflow.publish.bitbucket.failures import failure, unusable_url
from reviewflow.publish.bitbucket.markup import from_bitbucket, to_bitbucket
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.sessions import CountingSession
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

CLOUD_API = "https://api.bitbucket.org/2.0"
PAGELEN = 100  # Bitbucket's largest page (its default is 10)
Json = dict[str, Any]


def bitbucket_client(ref: RequestRef, token: str, timeout_s: float) -> PlatformClient:
    """The client of `--publish bitbucket`: Bitbucket Cloud when the API base is Cloud's
    API 2.0 (`https://api.bitbucket.org/2.0`, the default, which `target.cloud_api`
    makes of any URL on Cloud's hosts, or any base ending in `/2.0`: a proxy, the tests' fake),
    else Bitbucket Data Center (`reviewflow.publish.bitbucket.dc`)."""
    if is_cloud(ref.api_url):
        return BitbucketCloudClient(ref, token, timeout_s)
    from reviewflow.publish.bitbucket.dc import BitbucketServerClient

    return BitbucketServerClient(ref, token, timeout_s)


def is_cloud(api_url: str) -> bool:
    return api_url.strip().rstrip("/").endswith("/2.0")


class BitbucketCloudClient:
    """`PlatformClient` for one Bitbucket Cloud pull request (`ref.repo`: WORKSPACE/REPO_SLUG)."""

    def __init__(
        self, ref: RequestRef, token: str, timeout_s: float = 30.0, *, pagelen: int = PAGELEN
    ) -> None:
        self.calls = 0
        self._ref = ref
        self._token = token
        self._pagelen = pagelen
        self._session = CountingSession(self._sent)
        workspace, _, slug = ref.repo.partition("/")
        api = ref.api_url.strip().rstrip("/")
        self._repo_url = f"{api}/repositories/{quote(workspace, safe='')}/{quote(slug, safe='')}"
        self._api = BitbucketCloudBase(
            self._repo_url,
            token=token,
            session=self._session,
            cloud=True,
            backoff_and_retry=False,
            retry_with_header=False,
        )
        self._api.timeout = timeout_s  # type: ignore[assignment]  # it keeps int(timeout_s)
        self._pull = f"pullrequests/{ref.number}"

    def _sent(self) -> None:
        self.calls += 1

    def read(self) -> RequestState:
        """The pull request, its inline threads and its other comments."""
        with self._translated("reading the pull request", reading=True):
            info = self._info(PullRequest(self._api.get(self._pull), session=self._session))
            pages = self._api._get_paged(
                f"{self._pull}/comments", params={"pagelen": self._pagelen}
            )
            comments = [self._comment(value) for value in pages]
        return _state(info, comments)

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One inline comment each; the fingerprints of those whose lines are not the diff's."""
        lines = self._diff_lines()
        skipped: list[str] = []
        for comment in comments:
            inline = _inline(comment, lines.get(comment.path, frozenset()))
            if inline is None:
                skipped.append(comment.fingerprint)
                continue
            body = {"content": {"raw": to_bitbucket(comment.body)}, "inline": inline}
            with self._translated(f"posting a comment on {comment.path}"):
                self._api.post(f"{self._pull}/comments", data=body)
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` under the thread's first comment, then resolve the thread."""
        body = {"content": {"raw": to_bitbucket(reply)}, "parent": {"id": int(thread.id)}}
        with self._translated("replying in a thread"):
            self._api.post(f"{self._pull}/comments", data=body)
        with self._translated("resolving a thread"):
            self._api.post(f"{self._pull}/comments/{thread.id}/resolve")

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the comment `note` in place, or create a top-level comment."""
        data = {"content": {"raw": to_bitbucket(body)}}
        with self._translated("writing the summary comment"):
            if note is None:
                self._api.post(f"{self._pull}/comments", data=data)
            else:
                self._api.put(f"{self._pull}/comments/{note.id}", data=data)

    def _info(self, answer: PullRequest) -> RequestInfo:
        source, destination = answer.get_data("source"), answer.get_data("destination")
        base = self._full_hash(destination["commit"]["hash"])
        links = answer.get_data("links") or {}
        return RequestInfo(
            base_sha=base,
            head_sha=self._full_hash(source["commit"]["hash"]),
            start_sha=base,
            web_url=str((links.get("html") or {}).get("href") or ""),
            base_ref=str(answer.destination_branch or ""),
            head_ref=str(answer.source_branch or ""),
        )

    def _full_hash(self, prefix: str) -> str:
        answer = self._api.get(f"commit/{prefix}")
        commit = Commit(answer if isinstance(answer, dict) else {}, session=self._session)
        full = str(commit.hash or "")
        if not full.startswith(prefix):
            raise ValueError(f"commit {prefix} answered as {full!r}")
        return full

    def _comment(self, value: object) -> Comment:
        return Comment(value if isinstance(value, dict) else {}, session=self._session)

    def _diff_lines(self) -> dict[str, frozenset[int]]:
        """Each changed file's new-side lines inside the hunks of the pull request's diff."""
        with self._translated("reading the pull request's diff", reading=True):
            diff = self._api.get(f"{self._pull}/diff", not_json_response=True)
        files = parse_unified_diff(diff if isinstance(diff, bytes | str) else b"")
        return {
            item.path: frozenset(
                line
                for hunk in item.hunks
                for line in range(hunk.new_start, hunk.new_start + hunk.new_count)
            )
            for item in files
        }

    @contextmanager
    def _translated(self, action: str, *, reading: bool = False) -> Iterator[None]:
        """The library's and requests' errors as reviewflow's (`client.py`), without the token."""
        try:
            yield
        except requests.HTTPError as err:
            raise failure(err, action, self._ref, self._scrub, reading=reading) from None
        except unusable_url() as err:
            detail = self._scrub(str(err))
            raise PublishSetupError(f"Bitbucket's API URL cannot be used ({detail})") from None
        except requests.RequestException as err:  # connection failures, timeouts
            raise failure(err, action, self._ref, self._scrub, reading=reading) from None
        except (ValueError, KeyError, TypeError) as err:  # an answer that is not Bitbucket's
            message = (
                f"Bitbucket's answer to {action} is not Bitbucket Cloud's API 2.0: check the"
                f" API URL {self._ref.api_url} ({self._scrub(str(err))[:200]})"
            )
            raise (PublishSetupError if reading else PublishError)(message) from None

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "[token]") if self._token else text


def _inline(comment: NewComment, lines: frozenset[int]) -> Json | None:
    """The `inline` anchor of `comment` on the new side (None: its last line is not the diff's)."""
    if comment.end_line not in lines:
        return None
    inline: Json = {"path": comment.path, "to": comment.end_line}
    if comment.start_line < comment.end_line and comment.start_line in lines:
        inline["start_to"] = comment.start_line
    return inline


def _state(info: RequestInfo, comments: Sequence[Comment]) -> RequestState:
    """Inline threads (a first comment with `inline`, its replies at any depth) and the other
    comments as notes; deleted comments left out."""
    by_id = {int(c.get_data("id")): c for c in comments}
    roots: dict[int, list[Comment]] = {}
    for comment in sorted(comments, key=lambda c: int(c.get_data("id"))):
        roots.setdefault(_root(comment, by_id), []).append(comment)
    threads: list[Thread] = []
    notes: list[SummaryNote] = []
    for root_id, members in roots.items():
        root = by_id.get(root_id)
        live = [c for c in members if not c.get_data("deleted")]
        if root is not None and root.get_data("inline") and not root.get_data("deleted"):
            threads.append(_thread(root, live))
        else:
            notes.extend(SummaryNote(id=str(c.get_data("id")), body=_raw(c)) for c in live)
    return RequestState(info=info, threads=tuple(threads), notes=tuple(notes))


def _root(comment: Comment, by_id: Mapping[int, Comment]) -> int:
    current, seen = comment, set()
    while (parent := current.get_data("parent")) and int(parent["id"]) in by_id:
        if int(parent["id"]) in seen:
            break
        seen.add(int(parent["id"]))
        current = by_id[int(parent["id"])]
    return int(current.get_data("id"))


def _thread(root: Comment, members: Sequence[Comment]) -> Thread:
    resolution = root.get_data("resolution") or {}
    return Thread(
        id=str(root.get_data("id")),
        path=str(root.get_data("inline").get("path") or ""),
        resolved=bool(resolution),
        resolved_by=_login(resolution.get("user")) if resolution else "",
        comments=tuple(
            PostedComment(id=str(c.get_data("id")), body=_raw(c), author=_login(c.get_data("user")))
            for c in members
        ),
    )


def _raw(comment: Comment) -> str:
    content = comment.get_data("content") or {}
    return from_bitbucket(str(content.get("raw") or ""))


def _login(user: object) -> str:
    """A person's Bitbucket nickname (their display name without one)."""
    if not isinstance(user, dict):
        return ""
    return str(user.get("nickname") or user.get("display_name") or "")
