"""BitbucketServerClient against the fake Bitbucket Data Center: atlassian-python-api sends every
request and parses every answer."""

from __future__ import annotations

import socket
import traceback
from collections.abc import Iterator

import pytest
from atlassian.bitbucket import Bitbucket

from reviewflow.errors import PublishError, PublishRefused, PublishSetupError, TransientPublishError
from reviewflow.publish.bitbucket.dc import BitbucketServerClient, server_url
from reviewflow.publish.bitbucket.dc_errors import TOKEN_REFUSED
from reviewflow.pullrequest.markers import finding_fingerprint, finding_marker, is_resolution
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from tests.publish.fake_bitbucket_dc import (
    ANCHOR_REFUSED,
    BOT,
    BOT_TOKEN,
    READ_ONLY_TOKEN,
    FakeBitbucketDC,
)

REPO = "PROJ/app"
PR = 7
TARGET, BASE, HEAD = "t" * 40, "b" * 40, "h" * 40
APP = "src/app.py"
RENAMED, ORIGINAL = "src/new_name.py", "src/old_name.py"


@pytest.fixture
def bb() -> Iterator[FakeBitbucketDC]:
    with FakeBitbucketDC() as fake:
        _add_pr(fake)
        yield fake


def _add_pr(fake: FakeBitbucketDC, repo: str = REPO) -> None:
    fake.add_pull_request(
        repo,
        PR,
        head_sha=HEAD,
        target_sha=TARGET,
        merge_base=BASE,
        commentable={APP: range(1, 300), RENAMED: {5, 6}},
        context={APP: range(300, 310)},
        renamed={RENAMED: ORIGINAL},
        source_branch="topic",
    )


def _client(fake: FakeBitbucketDC, token: str = BOT_TOKEN, **kwargs: int) -> BitbucketServerClient:
    return BitbucketServerClient(fake.ref(REPO, PR), token, 5.0, **kwargs)


def _fp(n: int) -> str:
    return f"{n:064x}"


def _comment(n: int, line: int = 0, path: str = APP, old_path: str = "") -> NewComment:
    line = line or n + 1
    return NewComment(
        fingerprint=_fp(n),
        path=path,
        old_path=old_path or path,
        start_line=max(1, line - 2),
        end_line=line,
        body=f"{finding_marker(_fp(n))}\n\nfinding {n}",
    )


def _anchors(fake: FakeBitbucketDC) -> list[dict[str, object]]:
    return [r.body["anchor"] for r in fake.requests if r.kind == "create_comment"]


def test_read_of_an_empty_pull_request_gives_its_shas_and_refs(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    state = client.read()
    assert (state.info.base_sha, state.info.start_sha, state.info.head_sha) == (BASE, TARGET, HEAD)
    assert state.info.web_url == f"{bb.url}/projects/PROJ/repos/app/pull-requests/{PR}"
    assert (state.info.base_ref, state.info.head_ref) == ("main", "topic")
    assert state.threads == () and state.notes == ()
    assert client.calls == bb.count() == 3
    assert bb.counts() == {"get_pr": 1, "merge_base": 1, "list_activities": 1}


def test_a_server_without_the_merge_base_resource_gives_the_targets_tip(
    bb: FakeBitbucketDC,
) -> None:
    bb.fail(404, kind="merge_base")  # before Bitbucket 8.16
    assert _client(bb).read().info.base_sha == TARGET


@pytest.mark.parametrize("per_page", [25, 100])
def test_120_comments_land_and_read_back_across_pages(bb: FakeBitbucketDC, per_page: int) -> None:
    client = _client(bb, per_page=per_page)
    info = client.read().info
    comments = [_comment(n) for n in range(120)]
    assert client.post(info, comments) == []
    state = client.read()
    assert [t.comments[0].body for t in state.threads] == [c.body for c in comments]
    assert [finding_fingerprint(t.comments[0].body) for t in state.threads] == [
        c.fingerprint for c in comments
    ]
    assert all(
        t.path == APP and not t.resolved and t.comments[0].author == BOT for t in state.threads
    )
    pages = -(-120 // per_page)
    assert bb.count("list_activities") == 1 + pages
    assert client.calls == bb.count() == 3 + 1 + 120 + 2 + pages  # one read of the diff
    lists = [r for r in bb.requests if r.kind == "list_activities"]
    assert {r.query["limit"] for r in lists} == {str(per_page)}
    stored = bb.roots(REPO, PR)[0]["text"]
    assert stored.startswith(f"[//]: # (reviewflow:finding {_fp(0)})\n\n") and "<!--" not in stored


def test_the_fake_pages_as_bitbucket_does_at_its_default_of_25(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(n) for n in range(30)])
    api = Bitbucket(bb.url, token=BOT_TOKEN, cloud=False, retry_with_header=False)
    page = api.get(f"rest/api/1.0/projects/PROJ/repos/app/pull-requests/{PR}/activities")
    assert (page["size"], page["limit"], page["isLastPage"], page["nextPageStart"]) == (
        25,
        25,
        False,
        25,
    )
    assert len(list(api.get_pull_requests_activities("PROJ", "app", PR))) == 30  # follows pages
    activities = list(api.get_pull_requests_activities("PROJ", "app", PR))
    assert activities[0]["comment"]["id"] > activities[-1]["comment"]["id"]  # newest first


def test_anchors_carry_the_diffs_hashes_line_types_ranges_and_a_renamed_files_old_path(
    bb: FakeBitbucketDC,
) -> None:
    client = _client(bb)
    comments = [
        _comment(0, line=12),
        _comment(1, line=6, path=RENAMED, old_path=ORIGINAL),  # line 4 is not in the diff
        _comment(2, line=5, path=RENAMED),  # the old path from the diff itself
        _comment(3, line=301),  # a context line
    ]
    assert client.post(client.read().info, comments) == []
    base = {"diffType": "EFFECTIVE", "fileType": "TO", "fromHash": BASE, "toHash": HEAD}
    assert _anchors(bb) == [
        {
            **base,
            "path": APP,
            "line": 12,
            "lineType": "ADDED",
            "multilineMarker": {"startLine": 10, "startLineType": "ADDED"},
            "multilineSpan": {"dstSpanStart": 10, "dstSpanEnd": 12},
        },
        {**base, "path": RENAMED, "srcPath": ORIGINAL, "line": 6, "lineType": "ADDED"},
        {**base, "path": RENAMED, "srcPath": ORIGINAL, "line": 5, "lineType": "ADDED"},
        {
            **base,
            "path": APP,
            "line": 301,
            "lineType": "CONTEXT",
            "multilineMarker": {"startLine": 299, "startLineType": "ADDED"},
            "multilineSpan": {"dstSpanStart": 299, "dstSpanEnd": 301},
        },
    ]
    assert [t.path for t in client.read().threads] == [APP, RENAMED, RENAMED, APP]


def test_a_comment_outside_the_diff_is_skipped_and_the_rest_land(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    comments = [
        _comment(0),
        _comment(1, line=400),  # a line of app.py the diff does not show
        _comment(2, line=9, path="src/untouched.py"),
        _comment(3),
    ]
    assert client.post(client.read().info, comments) == [_fp(1), _fp(2)]
    assert bb.count("create_comment") == 2
    assert [t.comments[0].body for t in client.read().threads] == [
        comments[0].body,
        comments[3].body,
    ]


def test_the_fake_refuses_an_anchor_off_the_diff_as_bitbucket_does(bb: FakeBitbucketDC) -> None:
    api = Bitbucket(bb.url, token=BOT_TOKEN, cloud=False, retry_with_header=False)
    url = f"rest/api/1.0/projects/PROJ/repos/app/pull-requests/{PR}/comments"
    anchor = {"diffType": "EFFECTIVE", "fileType": "TO", "toHash": HEAD, "path": APP}
    for line, kind in ((400, "ADDED"), (12, "CONTEXT"), (301, "ADDED")):
        response = api.post(
            url,
            data={"text": "x", "anchor": {**anchor, "line": line, "lineType": kind}},
            advanced_mode=True,
        )
        assert response.status_code == 400 and ANCHOR_REFUSED in response.text


def test_an_anchor_bitbucket_refuses_is_skipped_and_another_400_is_refused(
    bb: FakeBitbucketDC,
) -> None:
    client = _client(bb)
    info = client.read().info
    bb.fail(400, kind="create_comment", body={"errors": [{"message": ANCHOR_REFUSED}]})
    assert client.post(info, [_comment(0), _comment(1)]) == [_fp(0)]
    bb.fail(400, kind="create_comment", body={"errors": [{"message": "Text is too long."}]})
    with pytest.raises(PublishRefused, match="HTTP 400: Text is too long"):
        client.post(info, [_comment(2)])


def test_comments_on_a_head_that_moved_are_skipped(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    info = client.read().info
    bb.push(REPO, PR, "n" * 40, {APP: range(1, 300)})
    assert client.post(info, [_comment(0), _comment(1)]) == [_fp(0), _fp(1)]
    assert bb.count("create_comment") == 0


def test_resolve_replies_then_resolves_with_the_roots_version(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0), _comment(1)])
    thread = client.read().threads[0]
    before = client.calls
    client.resolve(thread, "<!-- reviewflow:resolved -->\nFixed in hhhhhhh.")
    assert client.calls - before == 3
    assert [r.kind for r in bb.requests[-3:]] == ["create_comment", "get_comment", "update_comment"]
    assert bb.requests[-1].body == {"version": 0, "threadResolved": True}
    after = client.read().threads
    assert after[0].resolved and after[0].resolved_by == BOT
    assert [(c.body, c.author) for c in after[0].comments[1:]] == [
        ("<!-- reviewflow:resolved -->\nFixed in hhhhhhh.", BOT)
    ]
    assert is_resolution(after[0].comments[1].body)
    assert not after[1].resolved and after[1].resolved_by == ""


def test_a_person_resolving_or_replying_shows_in_the_thread(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0), _comment(1)])
    first, second = client.read().threads
    bb.person_resolves(REPO, PR, first.id, "alice")
    bb.person_replies(REPO, PR, second.id, "reviewflow: dismiss not a bug", "bob")
    reply = bb.roots(REPO, PR)[1]["reply_ids"][0]
    bb.person_replies(REPO, PR, str(reply), "agreed", "carol")  # a reply to a reply
    first, second = client.read().threads
    assert (first.resolved, first.resolved_by) == (True, "alice")
    assert not second.resolved
    assert [(c.body, c.author) for c in second.comments[1:]] == [
        ("reviewflow: dismiss not a bug", "bob"),
        ("agreed", "carol"),
    ]


def test_write_note_creates_then_edits_in_place(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    client.write_note(None, "<!-- reviewflow:summary e30= -->\nsummary v1")
    (note,) = client.read().notes
    assert note.body == "<!-- reviewflow:summary e30= -->\nsummary v1"
    client.write_note(note, note.body.replace("v1", "v2"))
    assert client.read().notes == (SummaryNote(id=note.id, body=note.body.replace("v1", "v2")),)
    assert (bb.count("create_comment"), bb.count("update_comment")) == (1, 1)
    assert bb.count("get_comment") == 0  # the version came with the read
    assert [c["author"]["name"] for c in bb.roots(REPO, PR)] == [BOT]


def test_a_stale_version_is_transient(bb: FakeBitbucketDC) -> None:
    client = _client(bb)
    client.write_note(None, "summary")
    (note,) = client.read().notes
    bb.person_resolves(REPO, PR, note.id, "alice")  # bumps the comment's version
    with pytest.raises(TransientPublishError, match="HTTP 409") as caught:
        client.write_note(note, "summary v2")
    assert caught.value.wait_s > 0
    (note,) = client.read().notes  # the retry's read has the new version
    client.write_note(note, "summary v2")
    assert client.read().notes[0].body == "summary v2"


def test_general_comments_and_their_replies_are_notes_file_comments_are_not(
    bb: FakeBitbucketDC,
) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0)])
    client.write_note(None, "summary")
    person = bb.person_comments(REPO, PR, "looks fine overall", "carol")
    summary = next(c for c in bb.roots(REPO, PR) if c["text"] == "summary")
    bb.person_replies(REPO, PR, str(summary["id"]), "thanks", "dave")
    state = client.read()
    assert [n.body for n in state.notes] == ["summary", "thanks", "looks fine overall"]
    assert str(person["id"]) in {n.id for n in state.notes}
    assert len(state.threads) == 1


@pytest.mark.parametrize("suffix", ["", "/", "/rest/api/1.0", "/rest/api/1.0/"])
@pytest.mark.parametrize("prefix", ["", "/bitbucket"])
def test_any_context_path_with_or_without_the_rest_root(prefix: str, suffix: str) -> None:
    with FakeBitbucketDC(prefix=prefix) as fake:
        _add_pr(fake)
        client = BitbucketServerClient(fake.ref(REPO, PR, api_suffix=suffix), BOT_TOKEN, 5.0)
        client.post(client.read().info, [_comment(n) for n in range(3)])
        assert len(client.read().threads) == 3
        assert fake.count("unknown") == 0
        assert all(
            r.path.startswith(f"{prefix}/rest/api/1.0/projects/PROJ/repos/app/")
            for r in fake.requests
        )


def test_a_personal_repository() -> None:
    with FakeBitbucketDC() as fake:
        _add_pr(fake, repo="~alice/app")
        client = BitbucketServerClient(fake.ref("~alice/app", PR), BOT_TOKEN, 5.0)
        client.post(client.read().info, [_comment(0)])
        assert len(client.read().threads) == 1
        assert (
            fake.requests[0].path == f"/rest/api/1.0/projects/~alice/repos/app/pull-requests/{PR}"
        )


@pytest.mark.parametrize(
    ("api_url", "server"),
    [
        ("https://bitbucket.example.com", "https://bitbucket.example.com"),
        ("https://bitbucket.example.com/rest/api/1.0", "https://bitbucket.example.com"),
        ("https://host/bitbucket/rest/api/latest/", "https://host/bitbucket"),
        ("https://host/bitbucket/", "https://host/bitbucket"),
    ],
)
def test_server_url_from_the_api_base(api_url: str, server: str) -> None:
    assert server_url(api_url) == server


def test_an_unknown_token_is_a_setup_error(bb: FakeBitbucketDC) -> None:
    with pytest.raises(PublishSetupError) as caught:
        _client(bb, token="BBDC-nobody-knows-me").read()
    assert str(caught.value) == TOKEN_REFUSED
    assert bb.count() == 1


@pytest.mark.parametrize(
    ("repo", "number", "named"),
    [
        ("NOPE/app", PR, "Project NOPE does not exist"),
        ("PROJ/nope", PR, "Repository PROJ/nope does not exist"),
        (REPO, 99, "Pull request 99 does not exist"),
    ],
)
def test_an_unknown_project_repository_or_pull_request_is_a_setup_error(
    bb: FakeBitbucketDC, repo: str, number: int, named: str
) -> None:
    client = BitbucketServerClient(bb.ref(repo, number), BOT_TOKEN, 5.0)
    with pytest.raises(PublishSetupError, match=named) as caught:
        client.read()
    assert "--platform-repo" in str(caught.value)


def test_a_read_only_token_reads_but_every_write_is_refused(bb: FakeBitbucketDC) -> None:
    writer = _client(bb)
    writer.post(writer.read().info, [_comment(0)])
    writer.write_note(None, "summary")
    client = _client(bb, token=READ_ONLY_TOKEN)
    state = client.read()
    with pytest.raises(PublishRefused, match=r"HTTP 401.*Repository write"):
        client.post(state.info, [_comment(1)])
    with pytest.raises(PublishRefused, match="HTTP 401"):
        client.resolve(state.threads[0], "Fixed.")
    with pytest.raises(PublishRefused, match="HTTP 401"):
        client.write_note(None, "summary")
    with pytest.raises(PublishRefused, match="HTTP 403"):
        bb.fail(403, kind="update_comment")
        client.write_note(state.notes[0], "summary v2")
    assert client.calls == 3 + 1 + 1 + 1 + 1 + 1  # the diff, read before the refused post


@pytest.mark.parametrize(
    ("retry_after", "wait_s"), [(7, 7.0), (5000, 900.0), (0, 1.0), (None, 60.0)]
)
def test_rate_limits_are_transient_with_the_wait_named(
    bb: FakeBitbucketDC, retry_after: int | None, wait_s: float
) -> None:
    client = _client(bb)
    info = client.read().info
    bb.rate_limit(kind="create_comment", retry_after=retry_after)
    with pytest.raises(TransientPublishError) as caught:
        client.post(info, [_comment(0)])
    assert caught.value.wait_s == wait_s
    assert bb.count("create_comment") == 1  # the library neither slept nor retried


@pytest.mark.parametrize(
    "kind",
    [
        "get_pr",
        "merge_base",
        "list_activities",
        "get_diff",
        "create_comment",
        "get_comment",
        "update_comment",
    ],
)
def test_no_call_waits_or_retries_inside_the_library(bb: FakeBitbucketDC, kind: str) -> None:
    client = _client(bb)
    client.post(client.read().info, [_comment(0)])
    client.write_note(None, "summary")
    state = client.read()
    bb.rate_limit(kind=kind, retry_after=3)
    bb.fail(503, kind=kind)
    operations = {
        "get_diff": lambda: client.post(state.info, [_comment(1)]),
        "create_comment": lambda: client.post(state.info, [_comment(1)]),
        "get_comment": lambda: client.resolve(state.threads[0], "Fixed."),
        "update_comment": lambda: client.write_note(state.notes[0], "summary v2"),
    }
    before = bb.count(kind)
    for wait_s in (3.0, 0.0):  # the 429, then the 503: each raised after one request
        with pytest.raises(TransientPublishError) as caught:
            operations.get(kind, client.read)()
        assert caught.value.wait_s == wait_s
    assert bb.count(kind) - before == 2
    assert client.calls == bb.count()


@pytest.mark.parametrize(("kind", "status"), [("get_pr", 500), ("list_activities", 502)])
def test_server_errors_are_transient(bb: FakeBitbucketDC, kind: str, status: int) -> None:
    bb.fail(status, kind=kind, body={"errors": [{"message": "Bad Gateway"}]})
    with pytest.raises(TransientPublishError, match=f"HTTP {status}"):
        _client(bb).read()
    assert bb.count(kind) == 1


def test_a_refused_connection_or_a_timeout_is_transient() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections, never answers
        port = silent.getsockname()[1]
        ref = RequestRef(
            platform="bitbucket", repo=REPO, number=1, api_url=f"http://127.0.0.1:{port}"
        )
        slow = BitbucketServerClient(ref, BOT_TOKEN, 0.2)
        with pytest.raises(TransientPublishError, match="could not be reached"):
            slow.read()
    refused = BitbucketServerClient(ref, BOT_TOKEN, 0.2)  # the port is closed now
    with pytest.raises(TransientPublishError, match="could not be reached"):
        refused.read()
    assert (slow.calls, refused.calls) == (1, 1)


def test_an_answer_that_is_not_the_api_is_a_setup_error(bb: FakeBitbucketDC) -> None:
    bb.fail(200, kind="get_pr", body=["a login page"])
    with pytest.raises(PublishSetupError, match="not its REST API's"):
        _client(bb).read()


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "create_comment", PublishRefused),
        (401, "create_comment", PublishRefused),
        (404, "get_pr", PublishSetupError),
        (409, "create_comment", PublishRefused),  # an archived repository
        (503, "create_comment", TransientPublishError),
    ],
)
def test_the_token_appears_in_no_message(
    bb: FakeBitbucketDC, status: int, kind: str, error: type[PublishError]
) -> None:
    bb.fail(status, kind=kind, body={"errors": [{"message": f"{status} echoing {{token}} back"}]})
    client = _client(bb)
    with pytest.raises(error) as caught:
        client.read() if kind == "get_pr" else client.write_note(None, "summary")
    assert "echoing [token] back" in str(caught.value)
    assert BOT_TOKEN in str(bb.requests[-1].headers)  # the fake did see it
    assert BOT_TOKEN not in "".join(traceback.format_exception(caught.value))
