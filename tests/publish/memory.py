"""An in-memory platform for the publisher's decisions (the HTTP fakes test the clients), and
the findings, outcomes and contexts the publishing tests and `bench/publish_calls.py` use."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from reviewflow.findings.finalize import fingerprint
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.models import Category, Severity
from reviewflow.pullrequest.context import PullRequestContext, ReviewScope
from reviewflow.pullrequest.models import (
    NewComment,
    PostedComment,
    RequestInfo,
    RequestRef,
    RequestState,
    SummaryNote,
    Thread,
)
from reviewflow.report.outcome import ReviewedFile, ReviewOutcome
from tests.report.samples import make_outcome

REF = RequestRef(platform="github", repo="acme/app", number=7, api_url="http://x")
INFO = RequestInfo(base_sha="b" * 40, head_sha="h" * 40, start_sha="b" * 40, web_url="http://pr/7")


class MemoryPlatform:
    """Threads and notes in memory; `commentable` lines per path (others are refused)."""

    def __init__(self, commentable: dict[str, set[int]] | None = None) -> None:
        self.calls = 0
        self.info = INFO
        self.commentable = commentable
        self.threads: list[Thread] = []
        self.notes: list[SummaryNote] = []
        self.posts: list[list[NewComment]] = []
        self._ids = itertools.count(1)

    def read(self) -> RequestState:
        self.calls += 1
        return RequestState(info=self.info, threads=tuple(self.threads), notes=tuple(self.notes))

    def post(self, info: RequestInfo, comments: Sequence[NewComment]) -> list[str]:
        self.calls += 1
        self.posts.append(list(comments))
        skipped = []
        for comment in comments:
            lines = (self.commentable or {}).get(comment.path, set())
            if self.commentable is not None and comment.end_line not in lines:
                skipped.append(comment.fingerprint)
                continue
            first = PostedComment(id=str(next(self._ids)), body=comment.body, author="bot")
            thread = Thread(id=f"t{next(self._ids)}", path=comment.path, resolved=False)
            self.threads.append(thread.model_copy(update={"comments": (first,)}))
        return skipped

    def resolve(self, thread: Thread, reply: str) -> None:
        self.calls += 1
        self.update(thread.id, reply, "bot", resolved=True, resolved_by="bot")

    def write_note(self, note: SummaryNote | None, body: str) -> None:
        self.calls += 1
        if note is None:
            self.notes.append(SummaryNote(id=str(next(self._ids)), body=body))
        else:
            self.notes = [
                SummaryNote(id=n.id, body=body) if n.id == note.id else n for n in self.notes
            ]

    def update(self, thread_id: str, reply: str | None, author: str, **changes: object) -> None:
        """A person's (or the bot's) action on a thread: a reply, resolving it."""
        out = []
        for thread in self.threads:
            if thread.id == thread_id:
                comments = thread.comments
                if reply is not None:
                    comments += (PostedComment(id=str(next(self._ids)), body=reply, author=author),)
                thread = thread.model_copy(update={"comments": comments, **changes})
            out.append(thread)
        self.threads = out

    def thread_of(self, fingerprint_: str) -> Thread:
        return next(t for t in self.threads if fingerprint_ in t.comments[0].body)


def finding(path: str, line: int, code: str, severity: str = "high", title: str = "t") -> Finding:
    digest = fingerprint(path, code, Category.CORRECTNESS)
    return Finding(
        id="F" + digest[:8],
        fingerprint=digest,
        severity=Severity(severity),
        category=Category.CORRECTNESS,
        path=path,
        start_line=line,
        end_line=line,
        title=title,
        problem="problem",
        confidence=0.9,
        existing_code=code,
        placed_by=PlacedBy.EXACT,
    )


def context(**update: object) -> PullRequestContext:
    base = PullRequestContext(
        ref=REF, info=INFO, base=INFO.base_sha, head=INFO.head_sha, scope=ReviewScope.FULL
    )
    return base.model_copy(update=update)


def many_findings(count: int) -> list[Finding]:
    return [finding(f"src/m{i % 4}.py", 10 + i, f"value_{i} = compute({i})") for i in range(count)]


def outcome_of(findings: list[Finding]) -> ReviewOutcome:
    files = tuple(ReviewedFile(path=p, rule={}) for p in sorted({f.path for f in findings}))
    return make_outcome(findings=tuple(findings), files=files, excluded=(), exit_code=1)


def full_context(ref: RequestRef, base: str, head: str) -> PullRequestContext:
    info = INFO.model_copy(update={"base_sha": base, "head_sha": head, "start_sha": base})
    return PullRequestContext(ref=ref, info=info, base=base, head=head, scope=ReviewScope.FULL)


def all_lines(findings: list[Finding]) -> dict[str, set[int]]:
    return {p: set(range(1, 400)) for p in {f.path for f in findings}}
