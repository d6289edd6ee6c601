"""GiteaClient against the fake Gitea (and Forgejo): every answer parsed by gitea_api's models."""

from __future__ import annotations

import socket
import traceback
from collections.abc import Iterator

import httpx
import pytest

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TransientPublishError,
)
from reviewflow.publish.gitea.api import TOKEN_REFUSED
from reviewflow.publish.gitea.client import RESOLVED_ON_SERVER, GiteaClient
from reviewflow.pullrequest.markers import RESOLVED, finding_marker
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from tests.publish.fake_gitea import BOT, READ_ONLY_TOKEN, TOKEN, FakeGitea

REPO, NUMBER = "acme/app", 7
BASE, HEAD = "b" * 40, "h" * 40
APP = "src/app.py"


@pytest.fixture
def gt() -> Iterator[FakeGitea]:
    with FakeGitea() as fake:
        _add(fake)
        yield fake


def _add(fake: FakeGitea) -> None:
    fake.add_pull(REPO, NUMBER, head_sha=HEAD, base_sha=BASE, commentable={APP: range(1, 300)})


def _client(fake: FakeGitea, token: str = TOKEN) -> GiteaClient:
    return GiteaClient(fake.ref(REPO, NUMBER), token, timeout=5.0)


def _comment(n: int, line: int = 0, path: str = APP, start: int = 0) -> NewComment:
    line = line or n + 1
    return NewComment(
        fingerprint=f"fp{n}",
        path=path,
        old_path=path,
        start_line=start or line,
        end_line=line,
        body=f"{finding_marker(f'{n:064x}')}\nfinding {n}",
    )


def test_read_of_an_empty_pull_request(gt: FakeGitea) -> None:
    client = _client(gt)
    state = client.read()
    assert (state.info.base_sha, state.info.start_sha, state.info.head_sha) == (BASE, BASE, HEAD)
    assert state.info.web_url == f"{gt.web}/{REPO}/pulls/{NUMBER}"
    assert (state.info.base_ref, state.info.head_ref) == ("main", "topic")
    assert state.threads == () and state.notes == ()
    assert client.calls == gt.count() == 3
    assert gt.counts() == {"get_pull": 1, "list_reviews": 1, "list_notes": 1}
    assert {r.headers["authorization"] for r in gt.requests} == {f"token {TOKEN}"}


def test_120_comments_are_three_reviews_and_read_back(gt: FakeGitea) -> None:
    client = _client(gt)
    info = client.read().info
    comments = [_comment(n) for n in range(120)]
    assert client.post(info, comments) == []
    posted = [r.body for r in gt.requests if r.kind == "create_review"]
    assert [len(b["comments"]) for b in posted] == [50, 50, 20]
    assert {(b["event"], b["commit_id"]) for b in posted} == {("COMMENT", HEAD)}
    assert gt.count("get_diff") == 1
    state = client.read()
    assert [t.comments[0].body for t in state.threads] == [c.body for c in comments]
    assert all(not t.resolved and t.comments[0].author == BOT for t in state.threads)
    assert gt.count("review_comments") == 3  # one a review
    assert gt.pull(REPO, NUMBER).off_diff == 0


def test_reviews_are_read_across_pages_of_50(gt: FakeGitea) -> None:
    pull = gt.pull(REPO, NUMBER)
    for n in range(120):  # people's reviews, straight into the fake's state
        gt.create_review(pull, "carol", {"event": "COMMENT", "body": f"review {n}"})
    line = {"path": APP, "new_position": 4, "body": "hm"}
    gt.create_review(pull, "carol", {"event": "COMMENT", "comments": [line]})
    client = _client(gt)
    state = client.read()
    assert [t.comments[0].body for t in state.threads] == ["hm"]
    lists = [r for r in gt.requests if r.kind == "list_reviews"]
    assert [(r.query["page"], r.query["limit"]) for r in lists] == [
        ("1", "50"),
        ("2", "50"),
        ("3", "50"),
    ]
    assert gt.count("review_comments") == 1  # reviews without line comments are not opened


def test_the_fake_pages_as_gitea_does_at_its_default_of_30(gt: FakeGitea) -> None:
    pull = gt.pull(REPO, NUMBER)
    for n in range(60):
        gt.create_review(pull, "carol", {"event": "COMMENT", "body": f"review {n}"})
    url = f"{gt.api_url}/repos/{REPO}/pulls/{NUMBER}/reviews"
    headers = {"Authorization": f"token {TOKEN}"}
    first = httpx.get(url, headers=headers)
    assert len(first.json()) == 30 and first.headers["X-Total-Count"] == "60"
    assert "Link" not in first.headers  # Gitea's review listing links no pages
    second = httpx.get(url, params={"page": 2}, headers=headers)
    assert len(second.json()) == 30 and second.json()[0]["body"] == "review 30"
    assert len(httpx.get(url, params={"limit": 500}, headers=headers).json()) == 50  # capped


def test_a_range_is_its_last_line_and_named_in_the_body(gt: FakeGitea) -> None:
    client = _client(gt)
    client.post(client.read().info, [_comment(0, line=12, start=10)])
    (sent,) = next(r.body for r in gt.requests if r.kind == "create_review")["comments"]
    assert (sent["path"], sent["new_position"]) == (APP, 12)
    assert sent["body"].endswith("lines 10–12</sub>")
    (thread,) = client.read().threads
    assert thread.id.endswith(":12") and thread.comments[0].body.startswith(
        finding_marker(f"{0:064x}")
    )


def test_a_comment_outside_the_diff_is_skipped_and_never_sent(gt: FakeGitea) -> None:
    client = _client(gt)
    comments = [
        _comment(0),
        _comment(1, line=400),
        _comment(2, path="src/untouched.py"),
        _comment(3),
    ]
    assert client.post(client.read().info, comments) == ["fp1", "fp2"]
    assert [t.comments[0].body for t in client.read().threads] == [
        comments[0].body,
        comments[3].body,
    ]
    assert gt.pull(REPO, NUMBER).off_diff == 0  # Gitea would have stored them off the Files view


def test_a_review_refused_as_a_whole_is_posted_one_comment_a_review(gt: FakeGitea) -> None:
    client = _client(gt)
    info = client.read().info
    gt.fail(422, kind="create_review", body={"message": "invalid comment"}, times=2)
    assert client.post(info, [_comment(0), _comment(1), _comment(2)]) == ["fp0"]
    assert [len(r.body["comments"]) for r in gt.requests if r.kind == "create_review"] == [
        3,
        1,
        1,
        1,
    ]
    assert len(client.read().threads) == 2


def test_resolve_replies_then_resolves(gt: FakeGitea) -> None:
    client = _client(gt)
    client.post(client.read().info, [_comment(0), _comment(1)])
    first, second = client.read().threads
    before = client.calls
    client.resolve(first, f"{RESOLVED}\nno longer reported")
    assert client.calls - before == 2
    assert [r.kind for r in gt.requests[-2:]] == ["reply", "resolve"]
    first, second = client.read().threads
    assert (first.resolved, first.resolved_by) == (True, BOT)
    marked = f"{RESOLVED}\nno longer reported\n\n{RESOLVED_ON_SERVER}"  # the resolver counts
    assert [c.body for c in first.comments[1:]] == [marked]
    assert not second.resolved


def test_on_forgejo_the_reply_is_a_review_on_the_line_and_stands_for_the_resolution() -> None:
    with FakeGitea() as fake:
        _add(fake)
        fake.forgejo()
        client = _client(fake)
        client.post(client.read().info, [_comment(0, line=5), _comment(1, line=9)])
        first, _ = client.read().threads
        client.resolve(first, f"{RESOLVED}\nno longer reported")
        kinds = [r.kind for r in fake.requests[-3:]]
        assert kinds == ["reply", "create_review", "resolve"]
        reply = fake.requests[-2].body["comments"]
        assert reply == [
            {"path": APP, "body": f"{RESOLVED}\nno longer reported", "new_position": 5}
        ]
        first, second = client.read().threads
        assert first.resolved and first.resolved_by == "" and len(first.comments) == 2
        assert not second.resolved


def test_people_resolving_and_replying_show_in_their_threads(gt: FakeGitea) -> None:
    client = _client(gt)
    client.post(client.read().info, [_comment(0, line=5), _comment(1, line=5), _comment(2, line=8)])
    a, b, c = client.read().threads
    assert a.id != b.id  # two findings on one line stay two threads
    gt.person_resolves(REPO, NUMBER, int(c.comments[0].id), "alice")
    gt.person_replies(REPO, NUMBER, int(b.comments[0].id), "reviewflow: dismiss not a bug", "bob")
    a, b, c = client.read().threads
    assert (c.resolved, c.resolved_by) == (True, "alice")
    assert [(x.body, x.author) for x in b.comments[1:]] == [
        ("reviewflow: dismiss not a bug", "bob")
    ]
    assert len(a.comments) == 1 and not a.resolved


def test_write_note_creates_then_edits_in_place(gt: FakeGitea) -> None:
    client = _client(gt)
    client.write_note(None, "<!-- reviewflow:summary --> v1")
    (note,) = client.read().notes
    client.write_note(note, "<!-- reviewflow:summary --> v2")
    assert client.read().notes == (SummaryNote(id=note.id, body="<!-- reviewflow:summary --> v2"),)
    assert (gt.count("create_note"), gt.count("edit_note")) == (1, 1)
    other = gt.create_note(gt.pull(REPO, NUMBER), "carol", "looks fine")
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.write_note(SummaryNote(id=str(other["id"]), body=""), "mine now")


def test_an_unknown_token_is_a_setup_error(gt: FakeGitea) -> None:
    with pytest.raises(PublishSetupError) as caught:
        _client(gt, token="nobody-knows-me").read()
    assert str(caught.value) == TOKEN_REFUSED and gt.count() == 1


@pytest.mark.parametrize(("repo", "number"), [("acme/nope", NUMBER), (REPO, 99)])
def test_an_unknown_repository_or_pull_request_is_a_setup_error(
    gt: FakeGitea, repo: str, number: int
) -> None:
    with pytest.raises(PublishSetupError, match=f"{repo}#{number} at .* \\(HTTP 404\\)"):
        GiteaClient(gt.ref(repo, number), TOKEN).read()


def test_a_read_only_token_reads_but_every_write_is_refused(gt: FakeGitea) -> None:
    _client(gt).post(_client(gt).read().info, [_comment(0)])
    client = _client(gt, READ_ONLY_TOKEN)
    state = client.read()
    with pytest.raises(PublishRefused, match=r"HTTP 403.*read-only"):
        client.post(state.info, [_comment(1)])
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.resolve(state.threads[0], "fixed")
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.write_note(None, "summary")
    assert client.calls == 4 + 2 + 1 + 1  # the read, the diff and the review, reply, note


@pytest.mark.parametrize(
    ("kind", "retry_after", "wait_s"),
    [("get_pull", "7", 7.0), ("create_review", "5000", 900.0), ("create_note", None, 60.0)],
)
def test_a_rate_limit_is_transient_with_its_wait_and_nothing_retries(
    gt: FakeGitea, kind: str, retry_after: str | None, wait_s: float
) -> None:
    client = _client(gt)
    info = client.read().info
    gt.rate_limit(kind=kind, retry_after=retry_after)
    gt.fail(503, kind=kind)
    operations = {
        "get_pull": client.read,
        "create_review": lambda: client.post(info, [_comment(0)]),
        "create_note": lambda: client.write_note(None, "summary"),
    }
    for expected in (wait_s, 0.0):  # the 429, then the 503: each raised after one request
        with pytest.raises(TransientPublishError) as caught:
            operations[kind]()
        assert caught.value.wait_s == expected
    assert gt.count(kind) == 2 + (kind == "get_pull")
    assert client.calls == gt.count()


def test_a_refused_connection_or_a_timeout_is_transient() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts, never answers
        port = silent.getsockname()[1]
        ref = RequestRef(
            platform="gitea", repo=REPO, number=1, api_url=f"http://127.0.0.1:{port}/api/v1"
        )
        slow = GiteaClient(ref, TOKEN, timeout=0.2)
        with pytest.raises(TransientPublishError, match="in time"):
            slow.read()
    refused = GiteaClient(ref, TOKEN, timeout=0.2)
    with pytest.raises(
        TransientPublishError, match=r"could not reach Gitea .*: connection refused$"
    ):
        refused.read()
    assert (slow.calls, refused.calls) == (1, 1)


@pytest.mark.parametrize("api_url", ["gitea.example.com/api/v1", "ftp://gitea.example.com/api/v1"])
def test_an_api_url_httpx_cannot_use_is_a_setup_error(api_url: str) -> None:
    ref = RequestRef(platform="gitea", repo=REPO, number=1, api_url=api_url)
    with pytest.raises(PublishSetupError, match="cannot be used"):
        GiteaClient(ref, TOKEN).read()


def test_an_answer_that_is_not_giteas_does_not_parse(gt: FakeGitea) -> None:
    gt.fail(200, kind="get_pull", body=[{"not": "a pull request"}])
    with pytest.raises(PublishError, match="not its API's"):
        _client(gt).read()


def test_a_gitea_under_a_path_prefix() -> None:
    with FakeGitea(prefix="/git") as fake:
        _add(fake)
        client = _client(fake)
        assert client.post(client.read().info, [_comment(0)]) == []
        assert len(client.read().threads) == 1
        assert all(r.path.startswith("/git/api/v1/repos/acme/app/") for r in fake.requests)
        assert fake.count("unknown") == 0


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "create_note", PublishRefused),
        (404, "get_pull", PublishSetupError),
        (409, "create_note", PublishRefused),
        (500, "create_note", TransientPublishError),
    ],
)
def test_the_token_appears_in_no_message(
    gt: FakeGitea, status: int, kind: str, error: type[PublishError]
) -> None:
    gt.fail(status, kind=kind, body={"message": "echoing {token} back"})
    client = _client(gt)
    with pytest.raises(error) as caught:
        client.read() if kind == "get_pull" else client.write_note(None, "summary")
    if error is not PublishSetupError:  # a 404's message is ours alone
        assert "echoing [REDACTED] back" in str(caught.value)
    assert TOKEN in str(gt.requests[-1].headers)  # the fake did see it
    assert TOKEN not in "".join(traceback.format_exception(caught.value))
