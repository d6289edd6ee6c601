"""Azure DevOps (Services and Server) pull requests through azure-devops' `GitClient`: one
thread per finding on its file's lines, the person's status changes, one summary thread.

`ref.api_url` is the collection URL (`https://dev.azure.com/ORG`, a server's
`https://host/tfs/Collection`), `ref.repo` is `PROJECT/REPOSITORY`. The token goes as HTTP Basic
with an empty user name: a personal access token and Azure Pipelines' `System.AccessToken` both
authenticate that way.

Nothing waits or retries inside: msrest's urllib3 retry policy is replaced by one that never
retries, and azure-devops' on-disk caches of the API's resource locations are off (its import
would otherwise create `~/.azure-devops`; `AZURE_DEVOPS_CACHE_DIR` defaults to the temporary
directory, which exists). A new client asks the collection for its resource locations again
(OPTIONS `_apis`; the library keeps them process-wide, by URL). The transport (counting
requests, keeping the last response for its status and rate-limit headers, refusing a 203
sign-in page, turning errors into reviewflow's) sits in `wire.py`.

A thread is "resolved" when its status is anything but active or pending: reviewflow sets
`fixed`; a person's `wontFix`, `closed`, `byDesign` or `fixed` is theirs (a dismissal, as a
person resolving a GitHub or GitLab thread). Azure DevOps anchors a thread on any line of any
path, so the client itself posts only on files the pull request's latest iteration changes (and
does not delete): a finding elsewhere is skipped, as GitHub and GitLab refuse it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from reviewflow.errors import TransientPublishError
from reviewflow.publish.azure_devops.target import split_repo
from reviewflow.publish.azure_devops.wire import Wire
from reviewflow.publish.azure_devops.wire import models as m
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)

OPEN_STATUSES = ("active", "pending", "unknown", "1", "6", "0")
_SYSTEM = ("system", "3")
_PAGE = 2000  # the iteration changes API's largest `$top`


class AzureDevOpsClient:
    """`PlatformClient` for one Azure DevOps pull request."""

    def __init__(
        self, ref: RequestRef, token: str, timeout: float = 30.0, *, page: int = _PAGE
    ) -> None:
        self._ref = ref
        self._project, self._repo = split_repo(ref.repo)
        self._wire = Wire(ref, token, timeout)
        self._git = self._wire.git
        self._page = page

    @property
    def calls(self) -> int:
        return self._wire.calls

    def read(self) -> RequestState:
        """The pull request, its file threads, and the comments of its other threads."""
        with self._wire.translated("reading the pull request", reading=True):
            pr = self._git.get_pull_request(self._repo, self._ref.number, project=self._project)
            threads = self._git.get_threads(self._repo, self._ref.number, project=self._project)
        info = self._info(pr)
        found: list[Thread] = []
        notes: list[SummaryNote] = []
        for thread in threads or []:
            if thread.is_deleted:
                continue
            context = thread.thread_context
            if context is not None and context.file_path:
                found.append(_thread(thread, context.file_path))
            else:
                notes.extend(
                    SummaryNote(id=f"{thread.id}:{c.id}", body=str(c.content or ""))
                    for c in _comments(thread)
                )
        return RequestState(info=info, threads=tuple(found), notes=tuple(notes))

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        """One active thread per comment, anchored on the latest iteration; the fingerprints of
        those on files it does not change (or when the head moved since `info`)."""
        iteration, source = self._latest_iteration()
        if source != info.head_sha:
            return [c.fingerprint for c in comments]
        changed = self._changed_files(iteration)
        skipped: list[str] = []
        for comment in comments:
            tracking = changed.get("/" + comment.path.lstrip("/"))
            if tracking is None:
                skipped.append(comment.fingerprint)
                continue
            with self._wire.translated(f"posting a comment on {comment.path}"):
                self._git.create_thread(
                    _finding_thread(comment, iteration, tracking),
                    self._repo,
                    self._ref.number,
                    project=self._project,
                )
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        """Reply `reply` in the thread, then set its status to fixed."""
        with self._wire.translated("replying in a thread"):
            self._git.create_comment(
                m.Comment(content=reply, parent_comment_id=1, comment_type="text"),
                self._repo,
                self._ref.number,
                int(thread.id),
                project=self._project,
            )
        with self._wire.translated("resolving a thread"):
            self._git.update_thread(
                m.GitPullRequestCommentThread(status="fixed"),
                self._repo,
                self._ref.number,
                int(thread.id),
                project=self._project,
            )

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        """Edit the summary thread's comment `note` in place, or start a thread without a file
        and without a status (nothing to resolve before completing the pull request)."""
        with self._wire.translated("writing the summary comment"):
            if note is None:
                thread = m.GitPullRequestCommentThread(
                    comments=[m.Comment(content=body, parent_comment_id=0, comment_type="text")]
                )
                self._git.create_thread(thread, self._repo, self._ref.number, self._project)
                return
            thread_id, comment_id = (int(part) for part in note.id.split(":"))
            self._git.update_comment(
                m.Comment(content=body),
                self._repo,
                self._ref.number,
                thread_id,
                comment_id,
                project=self._project,
            )

    def _latest_iteration(self) -> tuple[int, str]:
        with self._wire.translated("reading the pull request's iterations", reading=True):
            iterations = self._git.get_pull_request_iterations(
                self._repo, self._ref.number, project=self._project
            )
        if not iterations:
            raise TransientPublishError(f"{self._wire.what} has no iteration yet", 5.0)
        latest = max(iterations, key=lambda it: int(it.id))
        source = latest.source_ref_commit.commit_id if latest.source_ref_commit else ""
        return int(latest.id), str(source or "")

    def _changed_files(self, iteration: int) -> dict[str, int]:
        """`/path` -> changeTrackingId of every file the iteration changes (deletions left
        out), page by page. The library's change model keeps only changeTrackingId, so the
        paths come from the same answer's JSON."""
        out: dict[str, int] = {}
        skip = 0
        while True:
            with self._wire.translated("reading the pull request's changes", reading=True):
                page = self._git.get_pull_request_iteration_changes(
                    self._repo,
                    self._ref.number,
                    iteration,
                    project=self._project,
                    top=self._page,
                    skip=skip,
                )
            for entry in self._wire.last_json().get("changeEntries") or []:
                item = entry.get("item") or {}
                kind = str(entry.get("changeType") or "")
                if item.get("path") and "delete" not in kind and not item.get("isFolder"):
                    out[str(item["path"])] = int(entry.get("changeTrackingId") or 0)
            if not page.next_top:
                return out
            skip = int(page.next_skip or 0)

    def _info(self, pr: Any) -> RequestInfo:
        head = pr.last_merge_source_commit.commit_id if pr.last_merge_source_commit else None
        base = pr.last_merge_target_commit.commit_id if pr.last_merge_target_commit else None
        if not head or not base:
            raise TransientPublishError(
                f"Azure DevOps has not merged {self._wire.what} for its diff yet", 5.0
            )
        repository = pr.repository
        web = getattr(repository, "web_url", None) or self._wire.web_url()
        return RequestInfo(
            base_sha=base,
            head_sha=head,
            start_sha=base,
            web_url=f"{web}/pullrequest/{self._ref.number}",
            base_ref=str(pr.target_ref_name or "").removeprefix("refs/heads/"),
            head_ref=str(pr.source_ref_name or "").removeprefix("refs/heads/"),
        )


def _finding_thread(
    comment: NewComment, iteration: int, tracking: int
) -> m.GitPullRequestCommentThread:
    """An active thread on new-side lines start..end of the comment's file: from the first
    character of the first line (offset 1, columns counted from 1 as Azure DevOps' web view
    does) to the end of the last (the column after its last character, so the whole span is
    highlighted)."""
    return m.GitPullRequestCommentThread(
        comments=[m.Comment(content=comment.body, parent_comment_id=0, comment_type="text")],
        status="active",
        thread_context=m.CommentThreadContext(
            file_path="/" + comment.path.lstrip("/"),
            right_file_start=m.CommentPosition(line=comment.start_line, offset=1),
            right_file_end=m.CommentPosition(line=comment.end_line, offset=comment.end_length + 1),
        ),
        pull_request_thread_context=m.GitPullRequestCommentThreadContext(
            change_tracking_id=tracking,
            iteration_context=m.CommentIterationContext(
                first_comparing_iteration=1, second_comparing_iteration=iteration
            ),
        ),
    )


def _comments(thread: Any) -> Iterator[Any]:
    for comment in thread.comments or []:
        if not comment.is_deleted and str(comment.comment_type or "text") not in _SYSTEM:
            yield comment


def _author(comment: Any) -> str:
    who = comment.author
    return str((who.unique_name or who.display_name or "") if who else "")


def _thread(thread: Any, path: str) -> Thread:
    """A file thread: resolved unless active or pending; system comments left out."""
    status = str(thread.status or "unknown")
    comments = tuple(
        PostedComment(id=str(c.id), body=str(c.content or ""), author=_author(c))
        for c in _comments(thread)
    )
    return Thread(
        id=str(thread.id),
        path=path.lstrip("/"),
        resolved=status not in OPEN_STATUSES,
        comments=comments,
    )
