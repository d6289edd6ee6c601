"""AzureDevOpsClient against the fake Azure DevOps: azure-devops' GitClient parses every answer
with its own models, after asking the fake for its resource locations as it asks the service."""

from __future__ import annotations

import socket
import traceback
from collections.abc import Iterator

import pytest

from reviewflow.errors import (
    ConfigError,
    PublishError,
    PublishRefused,
    PublishSetupError,
    TransientPublishError,
)
from reviewflow.publish.azure_devops.client import AzureDevOpsClient
from reviewflow.publish.azure_devops.wire import TOKEN_REFUSED
from reviewflow.pullrequest.context import dismissed_in
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from tests.publish.fake_azure_devops import BOT, READ_ONLY_TOKEN, TOKEN, FakeAzureDevOps

REPO = "Fabrikam Fiber/app"
NUMBER = 7
BASE, HEAD = "b" * 40, "h" * 40
APP = "src/app.py"
CHANGED = {APP: "edit", "src/new.py": "add", "src/gone.py": "delete", "src/moved.py": "rename"}


@pytest.fixture
def ado() -> Iterator[FakeAzureDevOps]:
    with FakeAzureDevOps() as fake:
        fake.add_pull_request(
            "Fabrikam Fiber", "app", NUMBER, head=HEAD, base=BASE, changed=CHANGED
        )
        yield fake


def _client(fake: FakeAzureDevOps, token: str = TOKEN, **kwargs: int) -> AzureDevOpsClient:
    return AzureDevOpsClient(fake.ref(REPO, NUMBER), token, 5.0, **kwargs)


def _comment(n: int, line: int = 0, path: str = APP) -> NewComment:
    line = line or n + 3
    return NewComment(
        fingerprint=f"fp{n}",
        path=path,
        old_path=path,
        start_line=max(1, line - 2),
        end_line=line,
        body=f"<!-- reviewflow:finding {n:064x} -->\nfinding {n}",
    )


def test_read_of_an_empty_pull_request_asks_the_locations_once(ado: FakeAzureDevOps) -> None:
    client = _client(ado)
    state = client.read()
    assert (state.info.base_sha, state.info.head_sha, state.info.start_sha) == (BASE, HEAD, BASE)
    assert state.info.web_url == f"{ado.url}/Fabrikam%20Fiber/_git/app/pullrequest/{NUMBER}"
    assert (state.info.base_ref, state.info.head_ref) == ("main", "feature")
    assert state.threads == () and state.notes == ()
    client.read()
    assert ado.counts() == {"options": 1, "get_pr": 2, "list_threads": 2}
    assert client.calls == ado.count() == 5
    first = ado.requests[1]
    assert first.path == f"/acme/Fabrikam%20Fiber/_apis/git/repositories/app/pullRequests/{NUMBER}"
    assert first.headers["accept"] == "application/json;api-version=7.1-preview.1"
    assert first.headers["x-tfs-fedauthredirect"] == "Suppress"  # 401, not a sign-in page


def test_threads_sit_on_the_lines_of_the_latest_iteration(ado: FakeAzureDevOps) -> None:
    ado.push(NUMBER, HEAD, BASE, CHANGED)  # iteration 2, the same head
    client = _client(ado)
    assert (
        client.post(client.read().info, [_comment(0, line=12), _comment(1, 6, "src/new.py")]) == []
    )
    sent = [r.body for r in ado.requests if r.kind == "create_thread"]
    assert sent[0]["status"] == "active"
    assert sent[0]["threadContext"] == {
        "filePath": "/src/app.py",
        "rightFileStart": {"line": 10, "offset": 1},
        "rightFileEnd": {"line": 12, "offset": 1},
    }
    assert sent[0]["pullRequestThreadContext"] == {
        "changeTrackingId": 1,
        "iterationContext": {"firstComparingIteration": 1, "secondComparingIteration": 2},
    }
    assert (
        sent[1]["pullRequestThreadContext"]["changeTrackingId"] == 4
    )  # src/new.py, the fourth path
    state = client.read()
    assert [t.path for t in state.threads] == [APP, "src/new.py"]
    assert all(not t.resolved and t.comments[0].author == BOT for t in state.threads)


def test_a_comment_on_a_file_the_request_does_not_change_is_skipped(ado: FakeAzureDevOps) -> None:
    client = _client(ado)
    comments = [
        _comment(0),
        _comment(1, 4, "src/gone.py"),
        _comment(2, 9, "docs/x.md"),
        _comment(3),
    ]
    assert client.post(client.read().info, comments) == ["fp1", "fp2"]
    assert [t.comments[0].body for t in client.read().threads] == [
        comments[0].body,
        comments[3].body,
    ]
    assert ado.count("create_thread") == 2  # the service would have taken the other two


def test_the_changes_are_read_page_by_page(ado: FakeAzureDevOps) -> None:
    many = {f"src/f{n:03}.py": "add" for n in range(250)}
    ado.push(NUMBER, HEAD, BASE, many)
    client = _client(ado, page=100)
    comments = [_comment(n, 5, f"src/f{n:03}.py") for n in (0, 150, 249)]
    assert client.post(client.read().info, comments) == []
    pages = [r.query for r in ado.requests if r.kind == "list_changes"]
    assert [(q["$top"], q["$skip"]) for q in pages] == [
        ("100", "0"),
        ("100", "100"),
        ("100", "200"),
    ]
    assert len(client.read().threads) == 3


def test_comments_on_a_head_that_moved_are_skipped(ado: FakeAzureDevOps) -> None:
    client = _client(ado)
    info = client.read().info
    ado.push(NUMBER, "n" * 40, BASE, CHANGED)
    assert client.post(info, [_comment(0), _comment(1)]) == ["fp0", "fp1"]
    assert ado.count("create_thread") == 0


def test_resolve_replies_then_sets_fixed_and_is_not_a_dismissal(ado: FakeAzureDevOps) -> None:
    client = _client(ado)
    client.post(client.read().info, [_comment(0), _comment(1)])
    thread = client.read().threads[0]
    before = client.calls
    client.resolve(thread, "<!-- reviewflow:resolved -->\nFixed.")
    assert client.calls - before == 2
    assert [r.kind for r in ado.requests[-2:]] == ["create_comment", "update_thread"]
    assert ado.requests[-1].body == {"status": "fixed"}
    after = client.read().threads
    assert after[0].resolved and not after[1].resolved
    assert after[0].comments[1].body.endswith("Fixed.")
    assert dismissed_in(after) == {}


@pytest.mark.parametrize("status", ["wontFix", "closed", "byDesign", "fixed"])
def test_a_person_closing_a_thread_dismisses_it(ado: FakeAzureDevOps, status: str) -> None:
    client = _client(ado)
    client.post(client.read().info, [_comment(0), _comment(1)])
    first, second = client.read().threads
    ado.person_sets_status(first.id, status)
    ado.person_replies(second.id, "reviewflow: dismiss not a bug", "alice@fabrikam.com")
    first, second = client.read().threads
    assert first.resolved and not second.resolved
    assert second.comments[-1].author == "alice@fabrikam.com"
    assert dismissed_in([first, second]) == {
        f"{0:064x}": "thread resolved",
        f"{1:064x}": "dismissed by @alice@fabrikam.com: not a bug",
    }
    ado.person_sets_status(first.id, "active")  # reactivated: open again
    assert not client.read().threads[0].resolved


def test_the_summary_is_a_thread_without_file_or_status_edited_in_place(
    ado: FakeAzureDevOps,
) -> None:
    client = _client(ado)
    client.post(client.read().info, [_comment(0)])
    client.write_note(None, "summary v1")
    ado.system_thread(NUMBER, "Carol voted 10")
    (note,) = client.read().notes
    assert note.body == "summary v1"
    created = next(
        r.body
        for r in ado.requests
        if r.kind == "create_thread" and not r.body.get("threadContext")
    )
    assert "status" not in created  # nothing a person must resolve before completing
    client.write_note(note, "summary v2")
    assert client.read().notes == (SummaryNote(id=note.id, body="summary v2"),)
    assert ado.requests[-3].kind == "update_comment" and ado.count("create_thread") == 2
    ado.person_replies(note.id.split(":")[0], "thanks", "dave")
    assert [n.body for n in client.read().notes] == ["summary v2", "thanks"]


def test_an_unknown_token_and_a_sign_in_page_are_setup_errors(ado: FakeAzureDevOps) -> None:
    with pytest.raises(PublishSetupError) as caught:
        _client(ado, token="nobody-knows-me").read()
    assert str(caught.value) == TOKEN_REFUSED
    ado.fail(203, kind="get_pr", body="<html>Sign in to your account</html>")
    with pytest.raises(PublishSetupError, match="HTTP 203, a sign-in page"):
        _client(ado).read()


@pytest.mark.parametrize(
    ("repo", "number", "named"),
    [
        ("Nope/app", NUMBER, "project 'Nope' was not found"),
        ("Fabrikam Fiber/nope", NUMBER, "repository 'nope' was not found"),
        (REPO, 99, "pull request !99 of Fabrikam Fiber/app was not found"),
    ],
)
def test_an_unknown_project_repository_or_pull_request_is_a_setup_error(
    ado: FakeAzureDevOps, repo: str, number: int, named: str
) -> None:
    with pytest.raises(PublishSetupError, match=named):
        AzureDevOpsClient(ado.ref(repo, number), TOKEN).read()


def test_a_repo_that_is_not_project_slash_repository_is_a_config_error() -> None:
    ref = RequestRef(platform="azure", repo="a/b/c", number=1, api_url="http://x")
    with pytest.raises(ConfigError, match="PROJECT/REPOSITORY"):
        AzureDevOpsClient(ref, TOKEN)


def test_a_read_only_token_reads_but_every_write_is_refused(ado: FakeAzureDevOps) -> None:
    _client(ado).post(_client(ado).read().info, [_comment(0)])
    client = _client(ado, token=READ_ONLY_TOKEN)
    state = client.read()
    for write in (
        lambda: client.post(state.info, [_comment(1)]),
        lambda: client.resolve(state.threads[0], "Fixed."),
        lambda: client.write_note(None, "summary"),
    ):
        with pytest.raises(
            PublishRefused, match=r"HTTP 403.*TF401027.*Contribute to pull requests"
        ):
            write()
    assert client.calls == 3 + 2 + 3  # locations, reads; iterations and changes before the post


@pytest.mark.parametrize(
    ("retry_after", "reset_in", "wait_s"), [(7, 7, 7.0), (5000, 5000, 900.0), (None, 30, 30.0)]
)
def test_rate_limits_are_transient_with_the_wait_named(
    ado: FakeAzureDevOps, retry_after: int | None, reset_in: int, wait_s: float
) -> None:
    client = _client(ado)
    info = client.read().info
    ado.rate_limit(kind="create_thread", retry_after=retry_after, reset_in=reset_in)
    with pytest.raises(TransientPublishError) as caught:
        client.post(info, [_comment(0)])
    assert wait_s - 2 <= caught.value.wait_s <= wait_s
    assert ado.count("create_thread") == 1  # msrest neither slept nor retried


@pytest.mark.parametrize(
    "kind",
    ["options", "get_pr", "list_threads", "list_iterations", "list_changes", "create_thread",
     "create_comment", "update_thread", "update_comment"],
)  # fmt: skip
def test_no_call_waits_or_retries_inside_the_library(ado: FakeAzureDevOps, kind: str) -> None:
    setup = _client(ado)
    setup.post(setup.read().info, [_comment(0)])
    setup.write_note(None, "summary")
    state = setup.read()
    client = _client(ado)  # asks for the locations again, before its first request
    if kind != "options":
        state = client.read()
    ado.rate_limit(kind=kind, retry_after=3)
    ado.fail(503, kind=kind)
    operations = {
        "list_iterations": lambda: client.post(state.info, [_comment(1)]),
        "list_changes": lambda: client.post(state.info, [_comment(1)]),
        "create_thread": lambda: client.post(state.info, [_comment(1)]),
        "create_comment": lambda: client.resolve(state.threads[0], "Fixed."),
        "update_thread": lambda: client.resolve(state.threads[0], "Fixed."),
        "update_comment": lambda: client.write_note(state.notes[0], "summary v2"),
    }
    before = ado.count(kind)
    for wait_s in (3.0, 0.0):  # the 429, then the 503: each raised after one request
        with pytest.raises(TransientPublishError) as caught:
            operations.get(kind, client.read)()
        assert caught.value.wait_s == wait_s
    assert ado.count(kind) - before == 2


def test_a_refused_connection_or_a_timeout_is_transient() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections, never answers
        port = silent.getsockname()[1]
        ref = RequestRef(
            platform="azure",
            repo=REPO,
            number=1,
            api_url=f"http://127.0.0.1:{port}/o",
        )
        slow = AzureDevOpsClient(ref, TOKEN, timeout=0.2)
        with pytest.raises(TransientPublishError, match="could not be reached"):
            slow.read()
    refused = AzureDevOpsClient(ref, TOKEN, timeout=0.2)
    with pytest.raises(TransientPublishError, match="could not be reached"):
        refused.read()
    assert (slow.calls, refused.calls) == (1, 1)


@pytest.mark.parametrize("api_url", ["dev.azure.com/acme", "ftp://dev.azure.com/acme"])
def test_a_collection_url_requests_cannot_use_is_a_setup_error(api_url: str) -> None:
    ref = RequestRef(platform="azure", repo=REPO, number=1, api_url=api_url)
    with pytest.raises(PublishSetupError, match="collection URL cannot be used"):
        AzureDevOpsClient(ref, TOKEN).read()


def test_a_server_that_is_not_azure_devops_is_a_setup_error(ado: FakeAzureDevOps) -> None:
    ado.fail(200, kind="options", body="<html>a wiki</html>")
    with pytest.raises(PublishSetupError, match=r"not its API's|cannot serve"):
        _client(ado).read()


def test_nothing_is_cached_on_disk_or_across_clients(ado: FakeAzureDevOps) -> None:
    import azure.devops._file_cache as cache

    _client(ado).read()
    _client(ado).read()
    assert ado.count("options") == 2  # each new client asks again
    for kept in (cache.OPTIONS_CACHE, cache.RESOURCE_CACHE):
        assert kept.file_name == "" and not kept[ado.url.lower()]  # no file, nothing kept


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (400, "create_thread", PublishRefused),
        (403, "create_thread", PublishRefused),
        (404, "get_pr", PublishSetupError),
        (409, "create_thread", PublishRefused),
        (503, "create_thread", TransientPublishError),
    ],
)
def test_the_token_appears_in_no_message(
    ado: FakeAzureDevOps, status: int, kind: str, error: type[PublishError]
) -> None:
    body = {"$id": "1", "message": "TF0: echoing {token} back", "typeKey": "X", "errorCode": 0}
    ado.fail(status, kind=kind, body=body)
    client = _client(ado)
    with pytest.raises(error) as caught:
        client.read() if kind == "get_pr" else client.write_note(None, "summary")
    if error is not PublishSetupError:
        assert "echoing [token] back" in str(caught.value)
    assert "authorization" in ado.requests[-1].headers  # the fake did see it
    assert TOKEN not in "".join(traceback.format_exception(caught.value))
