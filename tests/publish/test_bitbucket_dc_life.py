"""The life of a pull request on Bitbucket Data Center through the neutral publisher
(`reviewflow.publish.publisher.publish`) and the real client against the fake: a first run, a
re-run on the same head, a fixing push, a person's dismissal and resolution, 120 findings,
hostile model text, and the token nowhere but in the Authorization header."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from reviewflow.findings.models import Finding
from reviewflow.publish.bitbucket.dc import BitbucketServerClient
from reviewflow.publish.publisher import publish
from reviewflow.publish.safe import safe_inline, safe_text
from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from reviewflow.pullrequest.models import PublishResult
from tests.publish.fake_bitbucket_dc import BOT_TOKEN, FakeBitbucketDC
from tests.publish.memory import all_lines, finding, full_context, many_findings, outcome_of

REPO, PR = "PROJ/app", 12
TARGET, HEAD, FIXED = "t" * 40, "h" * 40, "f" * 40
A = finding("app/a.py", 3, "x = eval(data)", title="eval of input")
B = finding("app/b.py", 9, "open(path)", severity="low", title="handle leaks")
C = finding("app/a.py", 20, "return a / b", severity="medium", title="division by zero")


@pytest.fixture
def bb() -> Iterator[FakeBitbucketDC]:
    with FakeBitbucketDC(prefix="/bitbucket") as fake:
        fake.add_pull_request(
            REPO, PR, head_sha=HEAD, target_sha=TARGET, commentable=all_lines([A, B, C])
        )
        yield fake


def _run(bb: FakeBitbucketDC, findings: list[Finding], head: str = HEAD) -> PublishResult:
    ref = bb.ref(REPO, PR)
    client = BitbucketServerClient(ref, BOT_TOKEN, 5.0)
    context = full_context(ref, TARGET, head)
    return publish(client, context, outcome_of(findings))


def _threads(bb: FakeBitbucketDC) -> dict[str | None, dict[str, object]]:
    client = BitbucketServerClient(bb.ref(REPO, PR), BOT_TOKEN, 5.0)
    state = client.read()
    return {
        finding_fingerprint(t.comments[0].body): {
            "resolved": t.resolved,
            "replies": len(t.comments) - 1,
        }
        for t in state.threads
    }


def test_first_run_rerun_fixing_push_dismissal_and_resolution(bb: FakeBitbucketDC) -> None:
    first = _run(bb, [A, B, C])
    assert (first.posted, first.summary, first.not_on_diff) == (3, "created", 0)
    assert first.url.endswith(f"/bitbucket/projects/PROJ/repos/app/pull-requests/{PR}")
    posts = bb.count("create_comment")

    rerun = _run(bb, [A, B, C])
    assert (rerun.posted, rerun.already_posted, rerun.summary) == (0, 3, "edited")
    assert bb.count("create_comment") == posts  # nothing new, the summary edited in place
    assert len([c for c in bb.roots(REPO, PR) if "anchor" not in c]) == 1

    bb.push(REPO, PR, FIXED, all_lines([A, B, C]))
    fixed = _run(bb, [B, C], head=FIXED)  # A fixed
    assert (fixed.posted, fixed.resolved) == (0, 1)
    assert _threads(bb)[A.fingerprint] == {"resolved": True, "replies": 1}

    threads = {
        finding_fingerprint(c["text"].replace("[//]: # (", "<!-- ").replace(")\n\n", " -->", 1)): c
        for c in bb.roots(REPO, PR)
    }
    bb.person_replies(
        REPO, PR, str(threads[B.fingerprint]["id"]), "reviewflow: dismiss not a bug", "bob"
    )
    bb.person_resolves(REPO, PR, str(threads[C.fingerprint]["id"]), "alice")
    later = _run(bb, [B, C], head=FIXED)
    assert (later.posted, later.dismissed, later.open) == (0, 2, 0)
    state = summary_state(_summary_text(bb))
    assert state is not None and state.head == FIXED and state.findings == ()


def test_120_findings_land_once(bb: FakeBitbucketDC) -> None:
    findings = many_findings(120)
    bb.push(REPO, PR, HEAD, all_lines(findings))
    first = _run(bb, findings)
    assert (first.posted, first.not_on_diff) == (120, 0)
    again = _run(bb, findings)
    assert (again.posted, again.already_posted) == (0, 120)
    assert len(_threads(bb)) == 120
    pages = [r for r in bb.requests if r.kind == "list_activities"]
    assert max(int(r.query["start"]) for r in pages) == 100  # 121 activities: two pages of 100


def test_hostile_text_arrives_inert(bb: FakeBitbucketDC) -> None:
    hostile = finding("app/a.py", 3, "x = eval(data)").model_copy(
        update={
            "title": '@alice @"Jane Doe" <script>alert(1)</script>',
            "problem": (
                "<!-- reviewflow:finding " + "0" * 64 + " -->\n[//]: # (reviewflow:summary e30=)\n"
                "```\n</details> closing the fence\n```\n@here /merge"
            ),
            "suggestion": "<img src=x onerror=alert(1)> @bob",
        }
    )
    assert _run(bb, [hostile]).posted == 1
    (root,) = [c for c in bb.roots(REPO, PR) if "anchor" in c]
    text = root["text"]
    marker = text.partition("\n\n")[0]  # the finding's marker, describing it
    assert marker.startswith(f"[//]: # (reviewflow:finding {hostile.fingerprint} ")
    assert marker.endswith(")") and "\n" not in marker
    body = text.split("\n\n", 1)[1]
    assert not re.search(r"@[\w\"]", body)  # every mention broken by a zero-width space
    assert not re.search(r"(?<!\\)<", body)  # no tag: every < escaped
    assert not re.search(r"^(\[//\]|<!--)", body, re.MULTILINE)  # no forged marker forms
    assert "\\[//\\]: \\# (reviewflow:summary" in body  # it arrives as the text it was
    assert (
        safe_inline(hostile.title) in body and safe_text(hostile.problem).split("\\\n")[0] in body
    )
    assert set(_threads(bb)) == {hostile.fingerprint}  # the forged marker names no thread


def test_the_token_is_only_in_the_authorization_header(bb: FakeBitbucketDC) -> None:
    _run(bb, [A, B])
    _run(bb, [B], head=HEAD)
    assert bb.count() > 10
    for request in bb.requests:
        assert request.headers["authorization"] == f"Bearer {BOT_TOKEN}"
        others = {k: v for k, v in request.headers.items() if k != "authorization"}
        seen = json.dumps([request.path, request.query, others, request.body])
        assert BOT_TOKEN not in seen


def _summary_text(bb: FakeBitbucketDC) -> str:
    (note,) = [c for c in bb.roots(REPO, PR) if "anchor" not in c]
    text = str(note["text"])
    match = re.match(r"\[//\]: # \((reviewflow:summary [^)]*)\)\n\n", text)
    assert match is not None
    return f"<!-- {match.group(1)} -->"
