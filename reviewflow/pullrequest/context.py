"""What a review of a pull/merge request knows before it starts (`PullRequestContext`), read
from the request before any model request: its SHAs, what to review, and what people dismissed.

It travels in the `ReviewRequest` (a flow parameter: no token in it), so the report knows the
dismissed findings and the gate sees the request's open findings carried from earlier runs.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from reviewflow.pullrequest.markers import (
    dismissal,
    finding_fingerprint,
    is_resolution,
    is_summary,
    posted_finding,
    summary_state,
)
from reviewflow.pullrequest.models import RequestInfo, RequestRef, RequestState, SummaryNote, Thread
from reviewflow.pullrequest.state import PriorFinding, SummaryState


class ReviewScope(StrEnum):
    FULL = "full"  # the request's base...head
    INCREMENTAL = "incremental"  # what the last reviewed head did not have: old_head..head
    FLAGS = "flags"  # the range the user's --commit/--from/--to named


class PullRequestContext(BaseModel):
    """The request a review publishes to, as it was read before the review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ref: RequestRef
    info: RequestInfo
    base: str  # the base and head this run reviews (the CI event's, else the platform's)
    head: str
    scope: ReviewScope
    previous_head: str | None = None
    dismissed: dict[str, str] = {}  # fingerprint -> why ("resolved by @x", a reply's reason)
    # a dismissed thread's finding's cluster (a review of several passes): fingerprint -> the
    # dismissed fingerprint (`dismissed`'s key), so a later review keeping that member is
    # silenced too
    dismissed_as: dict[str, str] = {}
    carried: tuple[PriorFinding, ...] = ()  # open findings this run does not look at again
    rereviewed: tuple[str, ...] = ()  # earlier open findings whose lines this run reviews again
    renames: dict[str, str] = {}  # new path -> old path, for the request's renamed files
    run_url: str | None = None  # a deployed run's flow run, for the summary's link

    def with_dismissed(self, extra: Mapping[str, str]) -> PullRequestContext:
        """This request with more dismissed fingerprints (why each): the repository's or the
        home's dismissals file. A carried finding dismissed there no longer counts."""
        if not extra:
            return self
        carried = tuple(f for f in self.carried if not any(k in extra for k in f.fingerprints))
        return self.model_copy(
            update={"dismissed": {**self.dismissed, **extra}, "carried": carried}
        )

    def dismissal_of(self, fingerprints: Sequence[str]) -> str | None:
        """The key in `dismissed` of a finding known by `fingerprints` (its own, then its
        cluster's: `Finding.fingerprints`), None when nobody dismissed it."""
        return dismissal_key(fingerprints, self.dismissed, self.dismissed_as)

    @property
    def from_ref(self) -> str:
        """Where the reviewed range starts: the last reviewed head, or the request's base."""
        if self.scope is ReviewScope.INCREMENTAL and self.previous_head:
            return self.previous_head
        return self.base


def ours(thread: Thread) -> str | None:
    """The fingerprint of a thread reviewflow started (None: someone else's)."""
    return finding_fingerprint(thread.comments[0].body) if thread.comments else None


def resolved_by_reviewflow(thread: Thread) -> bool:
    return thread.resolved and any(is_resolution(c.body) for c in thread.comments[1:])


def dismissed_in(threads: Iterable[Thread]) -> dict[str, str]:
    """Findings people dismissed: their thread resolved by a person, or answered with
    `reviewflow: dismiss [reason]`. Fingerprint -> reason."""
    out: dict[str, str] = {}
    for thread in threads:
        fingerprint = ours(thread)
        if fingerprint is None:
            continue
        replies = [c for c in thread.comments[1:] if not is_resolution(c.body)]
        for reply in replies:
            reason = dismissal(reply.body)
            if reason is not None:
                who = f" by @{reply.author}" if reply.author else ""
                out[fingerprint] = f"dismissed{who}" + (f": {reason}" if reason else "")
        if fingerprint not in out and thread.resolved and not resolved_by_reviewflow(thread):
            who = f" by @{thread.resolved_by}" if thread.resolved_by else ""
            out[fingerprint] = f"thread resolved{who}"
    return out


def dismissed_clusters(threads: Iterable[Thread]) -> dict[str, str]:
    """The cluster fingerprints of the findings people dismissed (their threads' markers hold
    them: a review of several passes), each to its thread's fingerprint."""
    dismissed = dismissed_in(threads)
    return {
        member: found.fingerprint
        for found in posted_in(threads)
        if found.fingerprint in dismissed
        for member in found.cluster_fingerprints or ()
    }


def posted_in(threads: Iterable[Thread]) -> list[PriorFinding]:
    """The findings reviewflow's threads describe (their first comment's marker)."""
    found = (posted_finding(t.comments[0].body) for t in threads if t.comments)
    return [f for f in found if f is not None]


def dismissal_key(
    fingerprints: Sequence[str], dismissed: Mapping[str, str], aliases: Mapping[str, str]
) -> str | None:
    """The key in `dismissed` of a finding known by `fingerprints` (its own first): one of
    them dismissed, else one a dismissed finding's cluster holds (`aliases`)."""
    direct = next((f for f in fingerprints if f in dismissed), None)
    if direct is not None:
        return direct
    return next((aliases[f] for f in fingerprints if aliases.get(f) in dismissed), None)


def thread_index(threads: Iterable[Thread]) -> dict[str, str]:
    """Every fingerprint a thread of reviewflow stands for -> the thread's own: its finding's,
    then its cluster's (a review of several passes), the first thread holding one winning."""
    index: dict[str, str] = {}
    for thread in threads:
        fingerprint = ours(thread)
        if fingerprint is not None:
            index.setdefault(fingerprint, fingerprint)
    for found in posted_in(threads):
        for member in found.cluster_fingerprints or ():
            index.setdefault(member, found.fingerprint)
    return index


_DETAIL = re.compile(r"\Adismissed(?: by @(?P<by>.+?))?(?:: (?P<why>.*))?\Z", re.DOTALL)
_RESOLVED = re.compile(r"\Athread resolved(?: by @(?P<by>.+))?\Z", re.DOTALL)


def dismissal_parts(detail: str) -> tuple[str, str] | None:
    """Who dismissed on the request and why, from the detail `dismissed_in` wrote
    (`dismissed by @ann: a fixture`, `thread resolved by @bob`); None for any other detail
    (a dismissals file's `dismissed in .reviewflow/dismissed.json ...`)."""
    found = _DETAIL.match(detail) or _RESOLVED.match(detail)
    if found is None:
        return None
    parts = found.groupdict()
    return parts.get("by") or "", parts.get("why") or ""


def on_the_request(dismissed: Mapping[str, str]) -> dict[str, str]:
    """The dismissals of `dismissed` people made on the request (not a dismissals file's)."""
    return {key: why for key, why in sorted(dismissed.items()) if dismissal_parts(why) is not None}


def open_in_threads(threads: Sequence[Thread], known: Collection[str]) -> tuple[PriorFinding, ...]:
    """The open findings only the platform's threads hold: reviewflow's threads open now (never
    resolved, or opened again by a person) whose finding neither `known` (the summary's state)
    nor a dismissal holds, as their first comment describes them (where it was posted)."""
    dismissed = dismissed_in(threads)
    out: dict[str, PriorFinding] = {}
    for thread in threads:
        found = posted_finding(thread.comments[0].body) if thread.comments else None
        if thread.resolved or found is None:
            continue
        if found.fingerprint not in known and found.fingerprint not in dismissed:
            out.setdefault(found.fingerprint, found)
    return tuple(out.values())


def summary_note(notes: Sequence[SummaryNote]) -> SummaryNote | None:
    """The summary an earlier run posted (the first, should a person have copied it)."""
    return next((note for note in notes if is_summary(note.body)), None)


def prior_state(state: RequestState) -> SummaryState | None:
    note = summary_note(state.notes)
    return summary_state(note.body) if note else None
