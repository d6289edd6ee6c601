"""The publisher through the real clients and the fakes (no flow): large results in batches,
hostile finding text as the platforms store it, and the API calls a run makes."""

from __future__ import annotations

import re

from pydantic import SecretStr

from reviewflow.errors import TransientPublishError
from reviewflow.findings.models import Finding
from reviewflow.publish.publisher import publish
from reviewflow.publish.tokens import client_for
from tests.publish import fake_github, fake_gitlab
from tests.publish.memory import all_lines, finding, full_context, many_findings, outcome_of
from tests.publish.test_text import HOSTILE


def test_120_findings_go_out_in_reviews_of_50_and_a_rerun_posts_none() -> None:
    findings = many_findings(120)
    with fake_github.FakeGitHub() as fake:
        fake.add_pull(7, commentable=all_lines(findings))
        ref = fake.ref(7)
        context = full_context(ref, fake_github.BASE_SHA, fake_github.HEAD_SHA)
        client = client_for(ref, SecretStr(fake_github.TOKEN))
        first = publish(client, context, outcome_of(findings))
        assert first.posted == 120
        assert [count for *_, count in fake.reviews(7)] == [50, 50, 20]
        again = publish(
            client_for(ref, SecretStr(fake_github.TOKEN)), context, outcome_of(findings)
        )
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
            assert publish(client, full_context(ref, base, head), outcome_of([hostile])).posted == 1
        [thread] = github.threads(7)
        bodies = [thread.comments[0].body, *(c.body for c in github.issue_comments(7))]
        bodies += [n["body"] for n in gitlab.notes(3)]
        assert len(bodies) == 4
        for body in bodies:
            _assert_inert(body)


def test_api_calls_of_a_40_finding_review_first_run_and_rerun() -> None:
    """The figures bench/RESULTS.md records (GitHub and GitLab)."""
    findings = many_findings(40)
    calls = {}
    with fake_github.FakeGitHub() as github, fake_gitlab.FakeGitLab() as gitlab:
        github.add_pull(7, commentable=all_lines(findings))
        gitlab.add_merge_request("acme/app", 3, head_sha="c" * 40, base_sha="b" * 40,
                                 commentable=all_lines(findings))  # fmt: skip
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
                publish(client, full_context(ref, base, head), outcome_of(findings))
                calls[(name, run)] = client.calls
    # GitHub: read (PR, threads, comments), 1 review, summary; GitLab: read (MR, discussions
    # in pages of 100), 40 discussions, summary. A re-run: the reads and the summary edit.
    assert calls == {
        ("github", "first"): 5,
        ("github", "rerun"): 4,
        ("gitlab", "first"): 43,
        ("gitlab", "rerun"): 3,
    }


def test_a_retry_after_a_rate_limit_half_way_posts_only_what_is_missing() -> None:
    findings = many_findings(120)
    with fake_github.FakeGitHub() as fake:
        fake.add_pull(7, commentable=all_lines(findings))
        ref = fake.ref(7)
        context = full_context(ref, fake_github.BASE_SHA, fake_github.HEAD_SHA)
        fake.fail_next(
            403,
            "You have exceeded a secondary rate limit.",
            headers={"retry-after": "1"},
            kind="pulls.create_review",
            after=1,  # the first review of 50 lands, the second is refused
        )
        token = SecretStr(fake_github.TOKEN)
        first = client_for(ref, token)
        try:
            publish(first, context, outcome_of(findings))
        except TransientPublishError as error:
            assert error.wait_s == 1
        else:
            raise AssertionError("the rate limit did not stop the first attempt")
        assert len(fake.threads(7)) == 50 and fake.issue_comments(7) == []
        retry = publish(
            client_for(ref, SecretStr(fake_github.TOKEN)), context, outcome_of(findings)
        )
        assert (retry.posted, retry.already_posted) == (70, 50)
        assert len({t.comments[0].body for t in fake.threads(7)}) == 120  # none twice
        assert len(fake.issue_comments(7)) == 1


def test_a_multi_line_finding_on_gitlab_is_posted_on_its_range_once() -> None:
    ranged = finding("src/app.py", 9, "total = a + b").model_copy(update={"end_line": 12})
    diff = "@@ -8,3 +8,6 @@\n context 8\n+added 9\n+added 10\n+added 11\n context 12\n"
    with fake_gitlab.FakeGitLab() as gitlab:
        gitlab.add_merge_request("acme/app", 3, head_sha="c" * 40, base_sha="b" * 40,
                                 diffs={"src/app.py": diff})  # fmt: skip
        ref = gitlab.ref("acme/app", 3)
        context = full_context(ref, "b" * 40, "c" * 40)
        for run in range(2):
            client = client_for(ref, SecretStr(fake_gitlab.BOT_TOKEN))
            result = publish(client, context, outcome_of([ranged]))
            assert (result.posted, result.already_posted) == ((1, 0) if run == 0 else (0, 1))
        [discussion] = [d for d in gitlab.discussions(3) if d["notes"][0].get("position")]
        span = discussion["notes"][0]["position"]["line_range"]
        assert (span["start"]["new_line"], span["end"]["new_line"]) == (9, 12)
        assert gitlab.count("create_discussion") == 1 and gitlab.count("list_diffs") == 1
