"""BitbucketCloudClient against the fake Bitbucket Cloud: atlassian-python-api's Cloud models
parse every answer; the Data Center choice of `bitbucket_client`."""

from __future__ import annotations

import socket
import traceback
from collections.abc import Iterator

import pytest
from atlassian.bitbucket.cloud.repositories.pullRequests import PullRequests

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TransientPublishError,
)
from reviewflow.publish.bitbucket.client import BitbucketCloudClient, bitbucket_client, is_cloud
from reviewflow.publish.bitbucket.failures import TOKEN_REFUSED
from reviewflow.pullrequest.markers import finding_fingerprint, is_summary, summary_marker
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from reviewflow.pullrequest.state import SummaryState
from tests.publish.fake_bitbucket import BOT, READ_ONLY_TOKEN, TOKEN, FakeBitbucket

REPO = "acme/app"
NUMBER = 7
BASE, HEAD = "b" * 40, "a" * 40
APP = "src/app.py"


@pytest.fixture
def bb() -> Iterator[FakeBitbucket]:
    with FakeBitbucket() as fake:
        fake.add_pull_request(
            REPO,
            NUMBER,
            source_hash=HEAD,
            destination_hash=BASE,
            commentable={APP: range(1, 300), "src/other.py": {5, 6, 9}},
            source_branch="topic",
        )
        yield fake


def _client(fake: FakeBitbucket, token: str = TOKEN, **kwargs: int) -> BitbucketCloudClient:
    return BitbucketCloudClient(fake.ref(REPO, NUMBER), token, 5.0, **kwargs)


def _comment(n: int, line: int = 0, path: str = APP, start: int = 0) -> NewComment:
    line = line or n + 1
    return NewComment(
        fingerprint=f"{n:064x}",
        path=path,
        old_path=path,
        start_line=start or max(1, line - 2),
        end_line=line,
        body=f"<!-- reviewflow:finding {n:064x} -->\n\nfinding {n}",
    )


def test_read_gives_full_hashes_branches_and_the_web_url(bb: FakeBitbucket) -> None:
    client = _client(bb)
    state = client.read()
    assert (state.info.base_sha, state.info.head_sha, state.info.start_sha) == (BASE, HEAD, BASE)
    assert (state.info.base_ref, state.info.head_ref) == ("main", "topic")
    assert state.info.web_url == f"{bb.origin}/{REPO}/pull-requests/{NUMBER}"
    assert state.threads == () and state.notes == ()
    assert bb.counts() == {"get_pr": 1, "get_commit": 2, "list_comments": 1}
    assert client.calls == bb.count() == 4
    assert [r.args[1] for r in bb.requests if r.kind == "get_commit"] == [BASE[:12], HEAD[:12]]


@pytest.mark.parametrize("pagelen", [10, 100])
def test_120_comments_land_and_read_back_across_pages(bb: FakeBitbucket, pagelen: int) -> None:
    client = _client(bb, pagelen=pagelen)
    info = client.read().info
    comments = [_comment(n) for n in range(120)]
    assert client.post(info, comments) == []
    state = client.read()
    assert [t.comments[0].body for t in state.threads] == [c.body for c in comments]
    assert [finding_fingerprint(t.comments[0].body) for t in state.threads] == [
        c.fingerprint for c in comments
    ]
    assert all(not t.resolved and t.comments[0].author == BOT for t in state.threads)
    pages = -(-120 // pagelen)
    assert bb.count("list_comments") == 1 + pages
    assert client.calls == bb.count() == 4 + 2 + 120 + 3 + pages  # the diff: 302, then text
    lists = [r for r in bb.requests if r.kind == "list_comments"]
    assert {r.query["pagelen"] for r in lists} == {str(pagelen)}


def test_the_fake_pages_as_bitbucket_does_at_its_default_of_10(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(n) for n in range(25)])
    prs = PullRequests(f"{bb.api_url}/repositories/{REPO}/pullrequests", token=TOKEN, cloud=True)
    pull = prs.get(NUMBER)
    before = bb.count("list_comments")
    listed = list(pull.comments())  # the library's own model, at Bitbucket's default pagelen
    assert [c.raw for c in listed][:1] and len(listed) == 25
    assert bb.count("list_comments") - before == 3
    pages = [r.query for r in bb.requests if r.kind == "list_comments"][-3:]
    assert pages[0] == {} and [p.get("page") for p in pages] == [None, "2", "3"]


def test_markers_are_hidden_on_bitbucket_and_read_back_as_markers(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0)])
    state = SummaryState(base=BASE, head=HEAD, findings=())
    summary = f"{summary_marker(state)}\n### reviewflow\n\n<details><summary>What</summary>\n\n"
    client.write_note(None, summary + "files\n</details>\n\n<sub>reviewflow 1.0</sub>")
    stored = bb.comments(REPO, NUMBER)
    assert stored[0]["content"]["raw"].startswith(f"[//]: # (reviewflow:finding {0:064x})\n")
    for comment in stored:  # what a reader sees: no marker, no HTML tag shown as text
        html = comment["content"]["html"]
        assert "reviewflow:" not in html and "&lt;" not in html, html
    assert "<strong>What</strong>" in stored[1]["content"]["html"]
    read = client.read()
    assert read.threads[0].comments[0].body == _comment(0).body
    assert is_summary(read.notes[0].body) and read.notes[0].body.startswith(summary_marker(state))


def test_a_range_is_posted_with_start_to_when_both_ends_are_on_the_diff(bb: FakeBitbucket) -> None:
    client = _client(bb)
    other = "src/other.py"
    comments = [_comment(0, line=12, start=10), _comment(1, line=6, path=other, start=3)]
    assert client.post(client.read().info, comments) == []
    sent = [r.body["inline"] for r in bb.requests if r.kind == "create_comment"]
    assert sent == [
        {"path": APP, "to": 12, "start_to": 10},
        {"path": other, "to": 6},  # line 3 is not on the diff: the range's last line alone
    ]
    assert [c["inline"]["start_to"] for c in bb.comments(REPO, NUMBER)] == [10, None]


def test_a_comment_outside_the_diff_is_skipped_and_the_rest_land(bb: FakeBitbucket) -> None:
    client = _client(bb)
    comments = [
        _comment(0),
        _comment(1, line=400),  # a line of app.py the diff does not show
        _comment(2, line=7, path="src/other.py"),  # between two hunks
        _comment(3, line=9, path="src/untouched.py"),
        _comment(4),
    ]
    fingerprints = [c.fingerprint for c in comments]
    assert client.post(client.read().info, comments) == fingerprints[1:4]
    assert [t.comments[0].body for t in client.read().threads] == [
        comments[0].body,
        comments[4].body,
    ]
    assert bb.count("create_comment") == 2 and bb.outside_diff(REPO, NUMBER) == []


def test_bitbucket_keeps_a_comment_outside_the_diff_so_the_client_must_not_send_it(
    bb: FakeBitbucket,
) -> None:
    prs = PullRequests(f"{bb.api_url}/repositories/{REPO}/pullrequests", token=TOKEN, cloud=True)
    outside = {"content": {"raw": "x"}, "inline": {"path": APP, "to": 400}}
    prs.post(f"{NUMBER}/comments", data=outside)
    assert len(bb.outside_diff(REPO, NUMBER)) == 1


def test_an_inline_bitbucket_refuses_is_a_refusal_with_its_reason(bb: FakeBitbucket) -> None:
    client = _client(bb)
    info = client.read().info
    bb.fail(400, kind="create_comment", body={"type": "error", "error": {"message": "too long"}})
    with pytest.raises(PublishRefused, match="HTTP 400: too long"):
        client.post(info, [_comment(0)])


def test_resolve_replies_then_resolves(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0), _comment(1)])
    thread = client.read().threads[0]
    before = client.calls
    client.resolve(thread, "<!-- reviewflow:resolved -->\nFixed in aaaaaaa.")
    assert client.calls - before == 2
    assert [r.kind for r in bb.requests[-2:]] == ["create_comment", "resolve"]
    assert bb.requests[-2].body["parent"] == {"id": int(thread.id)}
    after = client.read().threads
    assert after[0].resolved and after[0].resolved_by == BOT
    assert [(c.body, c.author) for c in after[0].comments[1:]] == [
        ("<!-- reviewflow:resolved -->\nFixed in aaaaaaa.", BOT)
    ]
    assert not after[1].resolved and after[1].resolved_by == ""
    with pytest.raises(PublishRefused, match="HTTP 409: Comment has already been resolved"):
        client.resolve(after[0], "again")


def test_a_person_resolving_or_replying_shows_in_the_thread(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0), _comment(1)])
    first, second = client.read().threads
    bb.person_resolves(first.id, "alice")
    reply = bb.person_replies(second.id, "reviewflow: dismiss not a bug", "bob")
    bb.person_replies(str(reply["id"]), "agreed", "carol")  # a reply to the reply
    first, second = client.read().threads
    assert (first.resolved, first.resolved_by) == (True, "alice")
    assert [(c.author, c.body) for c in second.comments[1:]] == [
        ("bob", "reviewflow: dismiss not a bug"),
        ("carol", "agreed"),
    ]
    assert not second.resolved


def test_write_note_creates_then_edits_in_place(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.write_note(None, "summary v1")
    (note,) = client.read().notes
    assert note.body == "summary v1"
    client.write_note(note, "summary v2")
    assert client.read().notes == (SummaryNote(id=note.id, body="summary v2"),)
    assert (bb.count("create_comment"), bb.count("edit_comment")) == (2 - 1, 1)
    assert [c["user"]["nickname"] for c in bb.comments(REPO, NUMBER)] == [BOT]
    other = bb.person_comments(REPO, NUMBER, "a person's comment", "carol")
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.write_note(SummaryNote(id=str(other["id"]), body=""), "taken over")


def test_notes_are_the_comments_outside_inline_threads(bb: FakeBitbucket) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0)])
    client.write_note(None, "summary")
    bb.person_comments(REPO, NUMBER, "looks fine overall", "carol")
    summary = next(c for c in bb.comments(REPO, NUMBER) if c["content"]["raw"] == "summary")
    bb.person_replies(str(summary["id"]), "thanks", "dave")
    bb.person_replies(client.read().threads[0].id, "hm", "carol")
    state = client.read()
    assert [n.body for n in state.notes] == ["summary", "thanks", "looks fine overall"]
    assert [len(t.comments) for t in state.threads] == [2]


def test_an_unknown_token_is_a_setup_error(bb: FakeBitbucket) -> None:
    with pytest.raises(PublishSetupError) as caught:
        _client(bb, token="nobody-knows-me").read()
    assert str(caught.value) == TOKEN_REFUSED
    assert bb.count() == 1


@pytest.mark.parametrize(
    ("repo", "number", "named"),
    [("acme/nope", NUMBER, "repository 'acme/nope' was not found"), (REPO, 99, "#99 of")],
)
def test_an_unknown_repository_or_pull_request_is_a_setup_error(
    bb: FakeBitbucket, repo: str, number: int, named: str
) -> None:
    client = BitbucketCloudClient(bb.ref(repo, number), TOKEN, 5.0)
    with pytest.raises(PublishSetupError, match=named):
        client.read()


def test_a_read_only_token_reads_but_every_write_is_refused(bb: FakeBitbucket) -> None:
    _client(bb).post(_client(bb).read().info, [_comment(0)])
    client = _client(bb, token=READ_ONLY_TOKEN)
    state = client.read()
    for write in (
        lambda: client.post(state.info, [_comment(1)]),
        lambda: client.resolve(state.threads[0], "Fixed."),
        lambda: client.write_note(None, "summary"),
    ):
        with pytest.raises(PublishRefused, match=r"HTTP 403: .*privilege scopes"):
            write()
    assert client.calls == 4 + 2 + 1 + 1 + 1  # the read, the diff (302 + text), each write


@pytest.mark.parametrize(("retry", "wait_s"), [(None, 60.0), (7, 7.0), (5000, 900.0), (0, 1.0)])
def test_a_rate_limit_is_transient_and_nothing_sleeps_or_retries(
    bb: FakeBitbucket, retry: int | None, wait_s: float
) -> None:
    client = _client(bb)
    info = client.read().info
    bb.rate_limit(kind="create_comment", retry_after=retry)
    with pytest.raises(TransientPublishError, match="rate-limited") as caught:
        client.post(info, [_comment(0)])
    assert caught.value.wait_s == wait_s
    assert bb.count("create_comment") == 1  # the library neither slept nor asked again


@pytest.mark.parametrize(
    "kind", ["get_pr", "get_commit", "list_comments", "pr_diff", "create_comment", "resolve"]
)
def test_server_errors_are_transient_after_one_request(bb: FakeBitbucket, kind: str) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0)])
    state = client.read()
    bb.fail(502, kind=kind, body="<html>502 Bad Gateway</html>")
    before = bb.count(kind)
    operations = {
        "pr_diff": lambda: client.post(state.info, [_comment(1)]),
        "create_comment": lambda: client.post(state.info, [_comment(1)]),
        "resolve": lambda: client.resolve(state.threads[0], "Fixed."),
    }
    with pytest.raises(TransientPublishError, match="HTTP 502") as caught:
        operations.get(kind, client.read)()
    assert caught.value.wait_s == 0.0 and bb.count(kind) - before == 1


def test_a_refused_connection_or_a_timeout_is_transient() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections, never answers
        port = silent.getsockname()[1]
        api = f"http://127.0.0.1:{port}/2.0"
        ref = RequestRef(platform="bitbucket", repo=REPO, number=1, api_url=api)
        slow = BitbucketCloudClient(ref, TOKEN, 0.3)
        with pytest.raises(TransientPublishError, match="could not be reached"):
            slow.read()
    refused = BitbucketCloudClient(ref, TOKEN, 0.3)  # the port is closed now
    with pytest.raises(TransientPublishError, match="could not be reached"):
        refused.read()
    assert (slow.calls, refused.calls) == (1, 1)


def test_an_answer_that_is_not_bitbucket_cloud_s_is_a_setup_error(bb: FakeBitbucket) -> None:
    bb.fail(200, kind="get_pr", body={"type": "repository", "full_name": REPO})
    with pytest.raises(PublishSetupError, match=r"not Bitbucket Cloud's API 2\.0"):
        _client(bb).read()


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "create_comment", PublishRefused),
        (403, "create_comment", PublishRefused),
        (404, "get_pr", PublishSetupError),
        (503, "create_comment", TransientPublishError),
    ],
)
def test_the_token_appears_in_no_message(
    bb: FakeBitbucket, status: int, kind: str, error: type[PublishError]
) -> None:
    body = {"type": "error", "error": {"message": "echoing {token} back", "detail": "{token}"}}
    bb.fail(status, kind=kind, body=body)
    client = _client(bb)
    with pytest.raises(error) as caught:
        client.read() if kind == "get_pr" else client.write_note(None, "summary")
    if error is not PublishSetupError:  # a 404's message is ours alone
        assert "echoing [token] back" in str(caught.value)
    assert TOKEN in str(bb.requests[-1].headers)  # the fake did see it
    assert TOKEN not in "".join(traceback.format_exception(caught.value))


def test_the_bitbucket_factory_is_cloud_for_cloud_s_api(bb: FakeBitbucket) -> None:
    assert is_cloud("https://api.bitbucket.org/2.0") and is_cloud(bb.api_url + "/")
    assert not is_cloud("https://bitbucket.example.com") and not is_cloud("https://h/rest/api/1.0")
    client = bitbucket_client(bb.ref(REPO, NUMBER), TOKEN, 5.0)
    assert isinstance(client, BitbucketCloudClient) and client.read().info.head_sha == HEAD


def test_the_bitbucket_factory_is_data_center_for_another_api_base() -> None:
    from reviewflow.publish.bitbucket.dc import BitbucketServerClient

    api = "https://bitbucket.example.com"
    ref = RequestRef(platform="bitbucket", repo="PROJ/app", number=1, api_url=api)
    assert isinstance(bitbucket_client(ref, TOKEN, 5.0), BitbucketServerClient)
