"""The publisher through the real clients and the fakes (no flow): large results in batches,
hostile finding text as the platforms store it, and the API calls a run makes."""

from __future__ import annotations

import re

from pydantic import SecretStr

from reviewflow.findings.models import Finding
from reviewflow.publish.context import PullRequestContext, ReviewScope
from reviewflow.publish.models import RequestRef
from reviewflow.publish.publisher import publish
from reviewflow.publish.tokens import client_for
from reviewflow.report.outcome import ReviewedFile, ReviewOutcome
from tests.publish import fake_github, fake_gitlab
from tests.publish.memory import INFO, finding
from tests.publish.test_text import HOSTILE
from tests.report.samples import make_outcome


def _findings(count: int) -> list[Finding]:
    return [finding(f"src/m{i % 4}.py", 10 + i, f"value_{i} = compute({i})") for i in range(count)]


def _outcome(findings: list[Finding]) -> ReviewOutcome:
    files = tuple(ReviewedFile(path=p, rule={}) for p in sorted({f.path for f in findings}))
    return make_outcome(findings=tuple(findings), files=files, excluded=(), exit_code=1)


def _context(ref: RequestRef, base: str, head: str) -> PullRequestContext:
    info = INFO.model_copy(update={"base_sha": base, "head_sha": head, "start_sha": base})
    return PullRequestContext(ref=ref, info=info, base=base, head=head, scope=ReviewScope.FULL)


def _lines(findings: list[Finding]) -> dict[str, set[int]]:
    return {p: set(range(1, 400)) for p in {f.path for f in findings}}


def test_120_findings_go_out_in_reviews_of_50_and_a_rerun_posts_none() -> None:
    findings = _findings(120)
    with fake_github.FakeGitHub() as fake:
        fake.add_pull(7, commentable=_lines(findings))
        ref = fake.ref(7)
        context = _context(ref, fake_github.BASE_SHA, fake_github.HEAD_SHA)
        client = client_for(ref, SecretStr(fake_github.TOKEN))
        first = publish(client, context, _outcome(findings))
        assert first.posted == 120
        assert [count for *_, count in fake.reviews(7)] == [50, 50, 20]
        again = publish(client_for(ref, SecretStr(fake_github.TOKEN)), context, _outcome(findings))
        assert (again.posted, again.already_posted, again.summary) == (0, 120, "edited")
        assert len(fake.threads(7)) == 120 and len(fake.issue_comments(7)) == 1


def _hostile() -> Finding:
    return finding("src/app.py", 12, "x = eval(data)").model_copy(
        update={
            "title": HOSTILE[:290],
            "problem": HOSTILE,
            "evidence": HOSTILE,
            "suggestion": HOSTILE,
        }
    )


def _assert_inert(body: str) -> None:
    assert "@octocat" not in body and "@acme/" not in body
    assert re.search(r"(?<!\\)<(img|!--(?! reviewflow:))", body) is None  # only our own marker
    assert not re.search(r"^\s*/(merge|approve)", body, re.MULTILINE)


def test_hostile_finding_text_reaches_github_and_gitlab_inert() -> None:
    hostile = _hostile()
    with fake_github.FakeGitHub() as github, fake_gitlab.FakeGitLab() as gitlab:
        github.add_pull(7, commentable={"src/app.py": {12}})
        gitlab.add_merge_request("acme/app", 3, head_sha="c" * 40, base_sha="b" * 40,
                                 commentable={"src/app.py": {12}})  # fmt: skip
        for ref, token, base, head in (
            (github.ref(7), fake_github.TOKEN, fake_github.BASE_SHA, fake_github.HEAD_SHA),
            (gitlab.ref("acme/app", 3), fake_gitlab.BOT_TOKEN, "b" * 40, "c" * 40),
        ):
            client = client_for(ref, SecretStr(token))
            assert publish(client, _context(ref, base, head), _outcome([hostile])).posted == 1
        [thread] = github.threads(7)
        bodies = [thread.comments[0].body, *(c.body for c in github.issue_comments(7))]
        bodies += [n["body"] for n in gitlab.notes(3)]
        assert len(bodies) == 4
        for body in bodies:
            _assert_inert(body)


def test_api_calls_of_a_40_finding_review_first_run_and_rerun() -> None:
    """The figures bench/RESULTS.md records (GitHub and GitLab)."""
    findings = _findings(40)
    calls = {}
    with fake_github.FakeGitHub() as github, fake_gitlab.FakeGitLab() as gitlab:
        github.add_pull(7, commentable=_lines(findings))
        gitlab.add_merge_request("acme/app", 3, head_sha="c" * 40, base_sha="b" * 40,
                                 commentable=_lines(findings))  # fmt: skip
        for name, ref, token, base, head in (
            (
                "github",
                github.ref(7),
                fake_github.TOKEN,
                fake_github.BASE_SHA,
                fake_github.HEAD_SHA,
            ),
            ("gitlab", gitlab.ref("acme/app", 3), fake_gitlab.BOT_TOKEN, "b" * 40, "c" * 40),
        ):
            for run in ("first", "rerun"):
                client = client_for(ref, SecretStr(token))
                publish(client, _context(ref, base, head), _outcome(findings))
                calls[(name, run)] = client.calls
    # GitHub: read (PR, threads, comments), 1 review, summary; GitLab: read (MR, discussions
    # in pages of 100), 40 discussions, summary. A re-run: the reads and the summary edit.
    assert calls == {
        ("github", "first"): 5,
        ("github", "rerun"): 4,
        ("gitlab", "first"): 43,
        ("gitlab", "rerun"): 3,
    }
