"""The publisher's decisions on an in-memory request: what is posted, resolved, dismissed and
carried, and what the summary says (the HTTP clients are tested against the fakes)."""

from __future__ import annotations

from typing import Any

from reviewflow.findings.models import Finding
from reviewflow.publish.publisher import publish
from reviewflow.pullrequest.context import (
    ReviewScope,
    dismissed_clusters,
    dismissed_in,
    prior_state,
)
from reviewflow.pullrequest.markers import (
    RESOLVED,
    finding_fingerprint,
    posted_finding,
    summary_state,
)
from reviewflow.pullrequest.state import PriorFinding
from reviewflow.report.assemble import split_dismissed
from reviewflow.report.outcome import ReviewedFile, ReviewOutcome
from tests.publish.memory import (
    MemoryPlatform,
    context,
    finding,
    many_findings,
    outcome_of,
)
from tests.report.samples import make_outcome

A = finding("app/a.py", 3, "x = eval(data)", title="eval of input")
B = finding("app/b.py", 9, "open(path)", severity="low", title="handle leaks")
C = finding("app/a.py", 20, "return a / b", severity="medium", title="division by zero")


def _outcome(
    *findings: Finding, files: tuple[str, ...] = ("app/a.py", "app/b.py")
) -> ReviewOutcome:
    reviewed = tuple(ReviewedFile(path=p, rule={}) for p in files)
    exit_code = 1 if any(f.severity.value == "high" for f in findings) else 0
    return make_outcome(findings=findings, files=reviewed, excluded=(), exit_code=exit_code)


def _state(platform: MemoryPlatform) -> Any:
    [note] = platform.notes
    state = summary_state(note.body)
    assert state is not None
    return state


def test_first_run_posts_each_finding_and_one_summary() -> None:
    platform = MemoryPlatform()
    result = publish(platform, context(), _outcome(A, B))
    assert (result.posted, result.resolved, result.summary) == (2, 0, "created")
    assert {finding_fingerprint(t.comments[0].body) for t in platform.threads} == {
        A.fingerprint,
        B.fingerprint,
    }
    state = _state(platform)
    assert state.head == "h" * 40 and {f.fingerprint for f in state.findings} == {
        A.fingerprint,
        B.fingerprint,
    }
    assert "gate failed" in platform.notes[0].body and "high 1" in platform.notes[0].body


def test_a_rerun_posts_nothing_and_edits_the_summary_in_place() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    posts = len(platform.posts)
    result = publish(platform, context(), _outcome(A, B))
    assert (result.posted, result.already_posted, result.summary) == (0, 2, "edited")
    assert len(platform.posts) == posts and len(platform.notes) == 1


def test_a_fixed_finding_has_its_thread_resolved_and_only_new_ones_are_posted() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    result = publish(platform, context(head="n" * 40), _outcome(B, C))
    assert (result.posted, result.resolved) == (1, 1)
    thread = platform.thread_of(A.fingerprint)
    assert thread.resolved and thread.comments[-1].body.startswith(RESOLVED)
    assert "`nnnnnnnnnnnn`" in thread.comments[-1].body  # names the commit
    assert {f.fingerprint for f in _state(platform).findings} == {B.fingerprint, C.fingerprint}


def test_threads_in_files_not_reviewed_again_stay_open() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    result = publish(platform, context(), _outcome(files=("app/a.py",)))
    assert result.resolved == 1 and not platform.thread_of(B.fingerprint).resolved
    assert {f.fingerprint for f in _state(platform).findings} == {B.fingerprint}


def test_an_incomplete_review_that_found_nothing_does_not_say_the_request_is_clean() -> None:
    platform = MemoryPlatform()
    failed = _outcome().model_copy(
        update={"status": "incomplete", "exit_code": 2, "incomplete_files": ("app/b.py",)}
    )
    publish(platform, context(), failed)
    body = platform.notes[0].body
    assert "No open findings on this pull request in the files reviewed." in body
    assert "app/b.py (error)" in body


def test_a_person_resolved_or_dismissed_thread_is_never_posted_again() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    platform.update(
        platform.thread_of(A.fingerprint).id, None, "ann", resolved=True, resolved_by="ann"
    )
    platform.update(
        platform.thread_of(B.fingerprint).id, "reviewflow: dismiss  test data only", "bob"
    )
    dismissed = dismissed_in(platform.read().threads)
    assert dismissed == {
        A.fingerprint: "thread resolved by @ann",
        B.fingerprint: "dismissed by @bob: test data only",
    }
    result = publish(platform, context(dismissed=dismissed), _outcome(A, B))
    assert (result.posted, result.resolved, result.dismissed) == (0, 0, 2)
    assert not platform.thread_of(
        B.fingerprint
    ).resolved  # a dismissal is left as the person left it
    assert _state(platform).findings == ()
    assert "Dismissed on this request" in platform.notes[0].body


def test_a_thread_reviewflow_resolved_is_not_a_dismissal_and_a_returning_finding_is_posted() -> (
    None
):
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A))
    publish(platform, context(), _outcome())
    assert dismissed_in(platform.read().threads) == {}
    result = publish(platform, context(), _outcome(A))
    assert result.posted == 1 and len(platform.threads) == 2


def test_findings_outside_the_diff_are_listed_in_the_summary_only() -> None:
    platform = MemoryPlatform(commentable={"app/a.py": {3}})
    result = publish(platform, context(), _outcome(A, B))
    assert (result.posted, result.not_on_diff) == (1, 1)
    body = platform.notes[0].body
    assert "not on the diff" in body and "handle leaks" in body
    assert "This run: 1 new comment, 0 threads resolved." in body
    assert "1 finding is outside the request's diff" in body


def test_incremental_runs_carry_earlier_findings_and_resolve_only_what_they_looked_at() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B, C))
    moved = PriorFinding.of(B).model_copy(update={"start_line": 12, "end_line": 12})
    incremental = context(
        scope=ReviewScope.INCREMENTAL,
        previous_head="h" * 40,
        head="n" * 40,
        carried=(PriorFinding.of(A), moved),
        rereviewed=(C.fingerprint,),
    )
    result = publish(platform, incremental, _outcome(files=("app/a.py",)))
    assert result.resolved == 1 and platform.thread_of(C.fingerprint).resolved
    assert not platform.thread_of(A.fingerprint).resolved  # same file, lines not looked at
    state = _state(platform)
    assert {(f.fingerprint, f.start_line) for f in state.findings} == {
        (A.fingerprint, 3),
        (B.fingerprint, 12),
    }
    assert "from an earlier review" in platform.notes[0].body
    assert "changes since `hhhhhhhhhhhh`" in platform.notes[0].body


def test_an_incomplete_review_keeps_the_last_complete_head() -> None:
    platform = MemoryPlatform()
    incomplete = _outcome(A).model_copy(update={"status": "incomplete", "exit_code": 2})
    publish(platform, context(previous_head="p" * 40), incomplete)
    assert _state(platform).head == "p" * 40
    assert "review incomplete" in platform.notes[0].body


def test_the_summary_marker_survives_a_person_editing_around_it_and_garbage_is_ignored() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A))
    assert prior_state(platform.read()) is not None
    platform.notes = [
        platform.notes[0].model_copy(update={"body": "<!-- reviewflow:summary !!! -->"})
    ]
    assert prior_state(platform.read()) is None  # unreadable: the next run reviews everything


def test_a_file_whose_review_did_not_finish_keeps_its_threads_open() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    failed = _outcome().model_copy(
        update={"status": "incomplete", "exit_code": 2, "incomplete_files": ("app/b.py",)}
    )
    result = publish(platform, context(), failed)
    assert result.resolved == 1 and not platform.thread_of(B.fingerprint).resolved
    assert {f.fingerprint for f in _state(platform).findings} == {B.fingerprint}
    body = platform.notes[0].body
    assert "> **Not reviewed to the end:** app/b.py (error): their findings may be" in body


def test_a_carried_finding_dismissed_in_the_dismissals_file_no_longer_counts() -> None:
    platform = MemoryPlatform()
    publish(platform, context(), _outcome(A, B))
    incremental = context(
        scope=ReviewScope.INCREMENTAL,
        previous_head="h" * 40,
        head="n" * 40,
        carried=(PriorFinding.of(A), PriorFinding.of(B)),
    ).with_dismissed({A.fingerprint: "dismissed in .reviewflow/dismissed.json: a test fixture"})
    assert [f.fingerprint for f in incremental.carried] == [B.fingerprint]  # the gate's view
    publish(platform, incremental, _outcome(files=()))
    assert {f.fingerprint for f in _state(platform).findings} == {B.fingerprint}
    assert not platform.thread_of(A.fingerprint).resolved  # dismissed, not fixed
    assert context().with_dismissed({}) == context()


def test_beyond_the_state_cap_the_summary_says_so_and_nothing_is_lost_or_posted_again() -> None:
    findings = many_findings(523)
    platform = MemoryPlatform(commentable={f.path: set(range(1, 600)) for f in findings})
    publish(platform, context(), outcome_of(findings))
    assert len(platform.threads) == 523 and len(_state(platform).findings) == 400
    capped = "Showing state for 400 of 523 open findings; the rest are tracked by their inline"
    assert capped in platform.notes[0].body
    kept = {f.fingerprint for f in _state(platform).findings}
    beyond = [f for f in findings if f.fingerprint not in kept]
    dismissed, open_beyond = beyond[0], beyond[1]
    platform.update(
        platform.thread_of(dismissed.fingerprint).id, "reviewflow: dismiss not a bug", "alice"
    )
    incremental = context(
        scope=ReviewScope.INCREMENTAL,
        previous_head="h" * 40,
        head="n" * 40,
        carried=_state(platform).findings,
    )
    posts = len(platform.posts)
    result = publish(platform, incremental, outcome_of([]).model_copy(update={"files": ()}))
    assert result.posted == 0 and len(platform.posts) == posts
    assert "Showing state for 400 of 522 open findings" in platform.notes[0].body
    assert not platform.thread_of(open_beyond.fingerprint).resolved
    rerun = publish(platform, context(head="n" * 40), outcome_of(findings))
    assert (rerun.posted, rerun.dismissed, rerun.already_posted) == (0, 1, 522)
    assert len(platform.posts) == posts
    assert dismissed.fingerprint not in {f.fingerprint for f in _state(platform).findings}


def test_a_cluster_keeps_its_thread_whichever_member_is_kept_and_its_dismissal_covers_all() -> None:
    """Two passes placed one defect twice (two fingerprints, one cluster): the thread of the
    member posted first stands for the cluster, whichever member a later run keeps, and a
    dismissal of that thread silences the other member, even in a run of one pass."""
    above = finding("app/a.py", 3, "x = eval(data)", title="eval of input")
    below = finding("app/a.py", 4, "return x", title="eval of input")
    platform = MemoryPlatform()
    first = above.model_copy(update={"cluster_fingerprints": (below.fingerprint,)})
    assert publish(platform, context(), _outcome(first)).posted == 1
    [thread] = platform.threads
    posted = posted_finding(thread.comments[0].body)
    assert posted is not None and posted.cluster_fingerprints == (below.fingerprint,)
    swapped = below.model_copy(update={"cluster_fingerprints": (above.fingerprint,)})
    for kept in (swapped, below):  # the other member kept, with its cluster or alone
        result = publish(platform, context(), _outcome(kept))
        assert (result.posted, result.resolved, result.open) == (0, 0, 1)
        assert platform.threads == [thread] and not thread.resolved
        assert [f.fingerprint for f in _state(platform).findings] == [above.fingerprint]
        assert "cluster_fingerprints" not in str(_state(platform).model_dump(exclude_none=True))
    platform.update(thread.id, "reviewflow: dismiss  not reachable", "bob")
    threads = platform.read().threads
    aliases = dismissed_clusters(threads)
    assert aliases == {below.fingerprint: above.fingerprint}
    known = context(dismissed=dismissed_in(threads), dismissed_as=aliases)
    assert known.dismissal_of(below.fingerprints) == above.fingerprint
    result = publish(platform, known, _outcome(below))
    assert (result.posted, result.resolved, result.dismissed) == (0, 0, 1)
    assert len(platform.threads) == 1
    kept, drops = split_dismissed([below, C], known)
    assert kept == (C,) and [(d.dismissed_as, d.detail) for d in drops] == [
        (above.fingerprint, "dismissed by @bob: not reachable")
    ]
