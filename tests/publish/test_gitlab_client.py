"""GitLabClient against the fake GitLab: python-gitlab parses every answer with its own objects."""

from __future__ import annotations

import hashlib
import socket
import traceback
import warnings
from collections.abc import Iterator

import gitlab
import pytest

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TransientPublishError,
)
from reviewflow.publish.gitlab.client import TOKEN_REFUSED, GitLabClient, instance_url
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from tests.publish.fake_gitlab import BOT, BOT_TOKEN, READ_ONLY_TOKEN, FakeGitLab

PROJECT = "group/sub/app"
PROJECT_ID = 4242
IID = 7
BASE, START, HEAD = "b" * 40, "s" * 40, "h" * 40
APP = "src/app.py"
RENAMED, ORIGINAL = "src/new_name.py", "src/old_name.py"


@pytest.fixture
def gl() -> Iterator[FakeGitLab]:
    with FakeGitLab() as fake:
        _add_mr(fake)
        yield fake


def _add_mr(fake: FakeGitLab) -> None:
    fake.add_merge_request(
        PROJECT,
        IID,
        project_id=PROJECT_ID,
        head_sha=HEAD,
        base_sha=BASE,
        start_sha=START,
        commentable={APP: range(1, 300), RENAMED: {5, 6}},
        renamed={RENAMED: ORIGINAL},
        source_branch="topic",
        target_branch="main",
    )


def _client(fake: FakeGitLab, token: str = BOT_TOKEN, **kwargs: int) -> GitLabClient:
    return GitLabClient(fake.ref(PROJECT, IID), token, timeout=5.0, **kwargs)


def _comment(n: int, line: int = 0, path: str = APP, old_path: str = "") -> NewComment:
    line = line or n + 1
    return NewComment(
        fingerprint=f"fp{n}",
        path=path,
        old_path=old_path or path,
        start_line=max(1, line - 2),
        end_line=line,
        body=f"finding {n}\n\n<!-- reviewflow:fp{n} -->",
    )


def test_read_of_an_empty_merge_request_gives_its_diff_refs(gl: FakeGitLab) -> None:
    client = _client(gl)
    state = client.read()
    assert (state.info.base_sha, state.info.start_sha, state.info.head_sha) == (BASE, START, HEAD)
    assert state.info.web_url == f"{gl.url}/{PROJECT}/-/merge_requests/{IID}"
    assert (state.info.base_ref, state.info.head_ref) == ("main", "topic")
    assert state.threads == () and state.notes == ()
    assert client.calls == gl.count() == 2
    assert gl.counts() == {"get_mr": 1, "list_discussions": 1}


@pytest.mark.parametrize("per_page", [20, 100])
def test_120_comments_land_and_read_back_across_pages(gl: FakeGitLab, per_page: int) -> None:
    client = _client(gl, per_page=per_page)
    info = client.read().info
    comments = [_comment(n) for n in range(120)]
    assert client.post(info, comments) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # python-gitlab warns on a partial list or a foreign URL
        state = client.read()
    assert [t.comments[0].body for t in state.threads] == [c.body for c in comments]
    assert {t.path for t in state.threads} == {APP}
    assert all(not t.resolved and t.comments[0].author == BOT for t in state.threads)
    pages = -(-120 // per_page)
    assert gl.count("list_discussions") == 1 + pages
    assert client.calls == gl.count() == 2 + 1 + 120 + 1 + pages  # one read of the diff
    lists = [r for r in gl.requests if r.kind == "list_discussions"]
    assert {r.query["per_page"] for r in lists} == {str(per_page)}


def test_the_fake_pages_as_gitlab_does_at_its_default_of_20(gl: FakeGitLab) -> None:
    client = _client(gl)
    client.post(client.read().info, [_comment(n) for n in range(45)])
    api = gitlab.Gitlab(gl.url, private_token=BOT_TOKEN)
    mr = api.projects.get(PROJECT, lazy=True).mergerequests.get(IID, lazy=True)
    first = mr.discussions.list(iterator=True)
    assert (first.per_page, first.total, first.total_pages, first.next_page) == (20, 45, 3, 2)
    assert len(list(first)) == 45  # the iterator follows the Link header
    assert len(mr.discussions.list(page=3)) == 5
    assert len(mr.discussions.list(per_page=500, get_all=False)) == 45  # capped at 100


def test_positions_carry_the_merge_requests_shas_and_a_renamed_files_old_path(
    gl: FakeGitLab,
) -> None:
    client = _client(gl)
    renamed = _comment(1, line=6, path=RENAMED, old_path=ORIGINAL)
    assert client.post(client.read().info, [_comment(0, line=12), renamed]) == []
    sent = [r.body["position"] for r in gl.requests if r.kind == "create_discussion"]
    shas = {"base_sha": BASE, "start_sha": START, "head_sha": HEAD, "position_type": "text"}
    app = hashlib.sha1(APP.encode()).hexdigest()
    span = {
        "start": {"line_code": f"{app}_1_10", "type": "new", "old_line": None, "new_line": 10},
        "end": {"line_code": f"{app}_1_12", "type": "new", "old_line": None, "new_line": 12},
    }
    assert sent == [
        {**shas, "new_path": APP, "old_path": APP, "new_line": 12, "line_range": span},
        {**shas, "new_path": RENAMED, "old_path": ORIGINAL, "new_line": 6},  # line 4: no range
    ]
    threads = client.read().threads
    assert [t.path for t in threads] == [APP, RENAMED]
    stored = gl.discussions(IID)[1]["notes"][0]
    assert stored["type"] == "DiffNote" and stored["position"]["old_path"] == ORIGINAL


def test_a_comment_outside_the_diff_is_skipped_and_the_rest_land(gl: FakeGitLab) -> None:
    client = _client(gl)
    comments = [
        _comment(0),
        _comment(1, line=400),  # a line of app.py the diff does not show
        _comment(2, line=5, path=RENAMED),  # the renamed file without its old path
        _comment(3, line=9, path="src/untouched.py"),
        _comment(4),
    ]
    assert client.post(client.read().info, comments) == ["fp1", "fp2", "fp3"]
    assert [t.comments[0].body for t in client.read().threads] == [
        comments[0].body,
        comments[4].body,
    ]


def test_comments_on_a_head_that_moved_are_skipped(gl: FakeGitLab) -> None:
    client = _client(gl)
    info = client.read().info
    gl.push(IID, "n" * 40, START, BASE, {APP: range(1, 300)})
    assert client.post(info, [_comment(0), _comment(1)]) == ["fp0", "fp1"]
    assert gl.count("create_discussion") == 2
    assert client.read().threads == ()


def test_a_position_refusal_is_told_from_another_400(gl: FakeGitLab) -> None:
    client = _client(gl)
    info = client.read().info
    gl.fail(400, kind="create_discussion", body={"message": "400 Bad request - Note too long"})
    with pytest.raises(PublishRefused, match="HTTP 400"):
        client.post(info, [_comment(0)])


def test_resolve_replies_then_resolves(gl: FakeGitLab) -> None:
    client = _client(gl)
    client.post(client.read().info, [_comment(0), _comment(1)])
    thread = client.read().threads[0]
    before = client.calls
    client.resolve(thread, "Fixed in hhhhhhh.")
    assert client.calls - before == 2
    assert [r.kind for r in gl.requests[-2:]] == ["reply", "resolve_discussion"]
    after = client.read().threads
    assert after[0].resolved and after[0].resolved_by == BOT
    assert [(c.body, c.author) for c in after[0].comments[1:]] == [("Fixed in hhhhhhh.", BOT)]
    assert not after[1].resolved and after[1].resolved_by == ""


def test_a_person_resolving_or_replying_shows_in_the_thread(gl: FakeGitLab) -> None:
    client = _client(gl)
    client.post(client.read().info, [_comment(0), _comment(1)])
    first, second = client.read().threads
    gl.person_resolves(first.id, "alice")
    gl.person_replies(second.id, "reviewflow: dismiss not a bug", "bob")
    first, second = client.read().threads
    assert (first.resolved, first.resolved_by) == (True, "alice")
    assert (second.resolved, second.comments[-1].author) == (False, "bob")
    assert second.comments[-1].body == "reviewflow: dismiss not a bug"


def test_write_note_creates_then_edits_in_place(gl: FakeGitLab) -> None:
    client = _client(gl)
    client.write_note(None, "summary v1 <!-- reviewflow:summary -->")
    (note,) = client.read().notes
    assert note.body == "summary v1 <!-- reviewflow:summary -->"
    client.write_note(note, "summary v2 <!-- reviewflow:summary -->")
    assert client.read().notes == (SummaryNote(id=note.id, body=note.body.replace("v1", "v2")),)
    assert (gl.count("create_note"), gl.count("edit_note")) == (1, 1)
    assert [n["author"]["username"] for n in gl.notes(IID)] == [BOT]


def test_summary_notes_are_the_notes_outside_diff_discussions_and_not_system(
    gl: FakeGitLab,
) -> None:
    client = _client(gl)
    client.post(client.read().info, [_comment(0), _comment(1)])
    client.write_note(None, "summary")
    gl.system_note(IID, "requested review from @bob")
    person = gl.person_comments(IID, "looks fine overall", "carol")
    threads = client.read().threads
    gl.person_replies(threads[0].id, "hm", "carol")
    summary = next(d for d in gl.discussions(IID) if d["notes"][0]["body"] == "summary")
    reply = gl.person_replies(summary["id"], "thanks", "dave")  # makes the note a thread
    gl.push(IID, "n" * 40, START, BASE, {APP: {2}})  # system notes, one inside a diff thread
    state = client.read()
    assert [n.body for n in state.notes] == ["summary", "thanks", "looks fine overall"]
    assert {n.id for n in state.notes} >= {str(person["id"]), str(reply["id"])}
    api = gitlab.Gitlab(gl.url, private_token=BOT_TOKEN)
    listed = api.projects.get(PROJECT_ID, lazy=True).mergerequests.get(IID, lazy=True).notes
    expected = {str(n.id) for n in listed.list(get_all=True) if not n.system and not n.type}
    expected |= {str(n.id) for n in listed.list(get_all=True) if n.type == "DiscussionNote"}
    assert {n.id for n in state.notes} == expected
    assert [len(t.comments) for t in state.threads] == [2, 1]  # the system note left out
    assert "changed this line" in gl.discussions(IID)[0]["notes"][-1]["body"]


@pytest.mark.parametrize("project", [PROJECT, str(PROJECT_ID)])
@pytest.mark.parametrize("prefix", ["", "/gitlab"])
def test_a_project_path_or_id_under_any_path_prefix(project: str, prefix: str) -> None:
    with FakeGitLab(prefix=prefix) as fake:
        _add_mr(fake)
        client = GitLabClient(fake.ref(project, IID), BOT_TOKEN, per_page=20)
        client.post(client.read().info, [_comment(n) for n in range(25)])
        assert len(client.read().threads) == 25
        assert fake.requests[0].args[0] == project
        # python-gitlab addresses what follows a fetched merge request by its project_id
        assert {r.args[0] for r in fake.requests} <= {project, str(PROJECT_ID)}
        assert all(r.path.startswith(f"{prefix}/api/v4/projects/") for r in fake.requests)
        assert fake.count("unknown") == 0


@pytest.mark.parametrize(
    ("api_url", "instance"),
    [
        ("https://gitlab.example.com/api/v4", "https://gitlab.example.com"),
        ("https://gitlab.example.com/api/v4/", "https://gitlab.example.com"),
        ("https://host/gitlab/api/v4", "https://host/gitlab"),
        ("https://host/gitlab", "https://host/gitlab"),
    ],
)
def test_instance_url_from_the_api_base(api_url: str, instance: str) -> None:
    assert instance_url(api_url) == instance


def test_an_unknown_token_is_a_setup_error(gl: FakeGitLab) -> None:
    with pytest.raises(PublishSetupError) as caught:
        _client(gl, token="glpat-nobody-knows-me").read()
    assert str(caught.value) == TOKEN_REFUSED
    assert gl.count() == 1


@pytest.mark.parametrize(
    ("project", "iid", "named"),
    [("group/sub/nope", IID, "'group/sub/nope' was not found"), (PROJECT, 99, "!99 of")],
)
def test_an_unknown_project_or_merge_request_is_a_setup_error(
    gl: FakeGitLab, project: str, iid: int, named: str
) -> None:
    client = GitLabClient(gl.ref(project, iid), BOT_TOKEN)
    with pytest.raises(PublishSetupError, match=named):
        client.read()


def test_a_read_only_token_reads_but_every_write_is_refused(gl: FakeGitLab) -> None:
    _client(gl).post(_client(gl).read().info, [_comment(0)])
    client = _client(gl, token=READ_ONLY_TOKEN)
    state = client.read()
    thread = state.threads[0]
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.post(state.info, [_comment(1)])
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.resolve(thread, "Fixed.")
    with pytest.raises(PublishRefused, match="HTTP 403"):
        client.write_note(None, "summary")
    assert client.calls == 2 + 3 + 1  # the diff, read before the refused post


@pytest.mark.parametrize(
    ("status", "retry_after", "reset_in", "wait_s"),
    [(429, 7, 7, 7.0), (403, 12, 12, 12.0), (429, 5000, 5000, 900.0), (429, 0, 0, 1.0)],
)
def test_rate_limits_are_transient_with_the_wait_named(
    gl: FakeGitLab, status: int, retry_after: int, reset_in: int, wait_s: float
) -> None:
    client = _client(gl)
    info = client.read().info
    gl.rate_limit(
        kind="create_discussion", status=status, retry_after=retry_after, reset_in=reset_in
    )
    with pytest.raises(TransientPublishError) as caught:
        client.post(info, [_comment(0)])
    assert caught.value.wait_s == wait_s
    assert gl.count("create_discussion") == 1  # python-gitlab neither slept nor retried


@pytest.mark.parametrize(
    "kind",
    [
        "get_mr",
        "list_discussions",
        "create_discussion",
        "reply",
        "resolve_discussion",
        "create_note",
        "edit_note",
    ],
)
def test_no_call_waits_or_retries_inside_python_gitlab(gl: FakeGitLab, kind: str) -> None:
    client = _client(gl)
    client.post(client.read().info, [_comment(0)])
    client.write_note(None, "summary")
    state = client.read()
    gl.rate_limit(kind=kind, retry_after=3)
    gl.fail(503, kind=kind)
    operations = {
        "create_discussion": lambda: client.post(state.info, [_comment(1)]),
        "reply": lambda: client.resolve(state.threads[0], "Fixed."),
        "resolve_discussion": lambda: client.resolve(state.threads[0], "Fixed."),
        "create_note": lambda: client.write_note(None, "summary"),
        "edit_note": lambda: client.write_note(state.notes[0], "summary v2"),
    }
    before = gl.count(kind)
    for wait_s in (3.0, 0.0):  # the 429, then the 503: each raised after one request
        with pytest.raises(TransientPublishError) as caught:
            operations.get(kind, client.read)()
        assert caught.value.wait_s == wait_s
    assert gl.count(kind) - before == 2
    assert client.calls == gl.count()


def test_a_rate_limit_without_retry_after_waits_until_the_reset(gl: FakeGitLab) -> None:
    gl.rate_limit(kind="get_mr", retry_after=None, reset_in=30)
    with pytest.raises(TransientPublishError) as caught:
        _client(gl).read()
    assert 28.0 <= caught.value.wait_s <= 30.0
    assert gl.count() == 1


@pytest.mark.parametrize(("kind", "status"), [("get_mr", 500), ("list_discussions", 502)])
def test_server_errors_are_transient(gl: FakeGitLab, kind: str, status: int) -> None:
    gl.fail(status, kind=kind, body="<html>502 Bad Gateway</html>" if status == 502 else None)
    with pytest.raises(TransientPublishError, match=f"HTTP {status}"):
        _client(gl).read()
    assert gl.count(kind) == 1


def test_a_refused_connection_or_a_timeout_is_transient() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections, never answers
        port = silent.getsockname()[1]
        ref = RequestRef(
            platform="gitlab", repo=PROJECT, number=1, api_url=f"http://127.0.0.1:{port}"
        )
        slow = GitLabClient(ref, BOT_TOKEN, timeout=0.2)
        with pytest.raises(TransientPublishError, match="could not be reached"):
            slow.read()
    refused = GitLabClient(ref, BOT_TOKEN, timeout=0.2)  # the port is closed now
    with pytest.raises(TransientPublishError, match="could not be reached"):
        refused.read()
    assert (slow.calls, refused.calls) == (1, 1)


@pytest.mark.parametrize("api_url", ["gitlab.example.com/api/v4", "ftp://gitlab.example.com"])
def test_an_api_url_requests_cannot_use_is_a_setup_error(api_url: str) -> None:
    ref = RequestRef(platform="gitlab", repo=PROJECT, number=1, api_url=api_url)
    client = GitLabClient(ref, BOT_TOKEN)
    with pytest.raises(PublishSetupError, match="API URL cannot be used"):
        client.read()


def test_a_diff_gitlab_has_not_computed_yet_is_transient() -> None:
    with FakeGitLab() as fake:
        fake.add_merge_request(PROJECT, IID, head_sha="", base_sha="")
        with pytest.raises(TransientPublishError, match="not computed"):
            _client(fake).read()


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "create_note", PublishRefused),
        (403, "create_note", PublishRefused),
        (404, "get_mr", PublishSetupError),
        (409, "create_note", PublishRefused),
        (503, "create_note", TransientPublishError),
    ],
)
def test_the_token_appears_in_no_message(
    gl: FakeGitLab, status: int, kind: str, error: type[PublishError]
) -> None:
    gl.fail(status, kind=kind, body={"message": f"{status} echoing {{token}} back"})
    client = _client(gl)
    with pytest.raises(error) as caught:
        client.read() if kind == "get_mr" else client.write_note(None, "summary")
    if error is not PublishSetupError:  # a 404's message is ours alone
        assert "echoing [token] back" in str(caught.value)
    assert BOT_TOKEN in str(gl.requests[-1].headers)  # the fake did see it
    assert BOT_TOKEN not in "".join(traceback.format_exception(caught.value))
