"""GitHubClient against the fake GitHub: githubkit's own models parse every answer."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from githubkit import GitHub

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TransientPublishError,
)
from reviewflow.publish.github.client import GitHubClient
from reviewflow.publish.github.failures import TOKEN_REFUSED
from reviewflow.pullrequest.context import dismissed_in
from reviewflow.pullrequest.markers import finding_marker
from reviewflow.pullrequest.models import NewComment, RequestRef, SummaryNote
from tests.publish.fake_github import BOT, HEAD_SHA, REPO, TOKEN, FakeGitHub

READ_ONLY = "ghs_forkReadOnlyToken000000000000000000"
LINES = {"src/app.py": range(1, 201), "src/util.py": [*range(10, 21), *range(40, 46)]}


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_pull(7, commentable=LINES)
        fake.add_token(READ_ONLY, "github-actions[bot]", read_only=True)
        yield fake


@pytest.fixture
def client(gh: FakeGitHub) -> GitHubClient:
    return GitHubClient(gh.ref(7), TOKEN, timeout=5.0)


def comment(n: int, line: int, start: int | None = None, path: str = "src/app.py") -> NewComment:
    return NewComment(
        fingerprint=f"fp{n}",
        path=path,
        old_path=path,
        start_line=line if start is None else start,
        end_line=line,
        body=f"finding {n}",
    )


def test_read_of_an_empty_pull_request(gh: FakeGitHub, client: GitHubClient) -> None:
    state = client.read()

    assert state.info.head_sha == HEAD_SHA
    assert state.info.base_sha == state.info.start_sha == "b" * 40
    assert state.info.web_url == f"{gh.url}/{REPO}/pull/7"
    assert (state.info.base_ref, state.info.head_ref) == ("main", "feature")
    assert state.threads == state.notes == ()
    assert gh.calls == {"pulls.get": 1, "graphql.repository": 1, "issues.list_comments": 1}
    assert client.calls == 3


def test_120_comments_post_as_three_reviews_and_read_back_through_pages(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    info = client.read().info

    skipped = client.post(info, [comment(n, n + 1) for n in range(120)])

    assert skipped == []
    assert [count for _, _, _, count in gh.reviews(7)] == [50, 50, 20]
    assert {(state, sha) for _, state, sha, _ in gh.reviews(7)} == {("COMMENTED", HEAD_SHA)}
    threads = client.read().threads
    assert [t.comments[0].body for t in threads] == [f"finding {n}" for n in range(120)]
    assert gh.calls["graphql.repository"] == 3  # 1 before, 2 pages of at most 100 after
    assert threads[0].comments[0].author == "github-actions"  # GraphQL drops `[bot]`


def test_a_multi_line_comment_carries_start_line_and_a_single_line_one_does_not(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    client.post(client.read().info, [comment(1, 12, start=10), comment(2, 30)])

    sent = next(r for r in gh.requests if r.kind == "pulls.create_review").body
    assert sent["commit_id"] == HEAD_SHA and sent["event"] == "COMMENT"
    assert sent["comments"][0] == {
        "path": "src/app.py",
        "body": "finding 1",
        "line": 12,
        "side": "RIGHT",
        "start_line": 10,
        "start_side": "RIGHT",
    }
    assert "start_line" not in sent["comments"][1]
    assert [(t.line, t.start_line) for t in gh.threads(7)] == [(12, 10), (30, None)]


def test_comments_github_refuses_are_skipped_and_the_rest_of_their_batch_lands(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    outside = comment(3, 500)  # past the diff
    across_hunks = comment(4, 41, start=19, path="src/util.py")  # start_line in another hunk
    batch = [
        comment(1, 5),
        comment(2, 6),
        outside,
        across_hunks,
        comment(5, 15, path="src/util.py"),
    ]
    batch += [comment(n, n) for n in range(6, 60)]  # a second batch, all fine

    skipped = client.post(client.read().info, batch)

    assert skipped == ["fp3", "fp4"]
    bodies = {t.comments[0].body for t in gh.threads(7)}
    assert len(bodies) == len(batch) - 2 and "finding 3" not in bodies
    # the first batch refused whole, then one review a comment; the second batch in one
    assert gh.calls["pulls.create_review"] == 1 + 50 + 1


def test_a_single_comment_batch_refused_is_not_posted_twice(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    assert client.post(client.read().info, [comment(1, 999)]) == ["fp1"]
    assert gh.calls["pulls.create_review"] == 1


def test_resolve_replies_in_the_thread_then_resolves_it_in_one_request(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    client.post(client.read().info, [comment(1, 5), comment(2, 6)])
    first, second = client.read().threads

    client.resolve(first, "Fixed in abc1234.")
    client.resolve(second, "")

    fake_first, fake_second = gh.threads(7)
    assert fake_first.resolved and fake_first.resolved_by == BOT
    assert [c.body for c in fake_first.comments] == ["finding 1", "Fixed in abc1234."]
    assert fake_second.resolved and len(fake_second.comments) == 1
    assert gh.calls["graphql.addPullRequestReviewThreadReply+resolveReviewThread"] == 1
    assert gh.calls["graphql.resolveReviewThread"] == 1
    read_back = client.read().threads[0]
    assert read_back.resolved and read_back.resolved_by == ""  # `resolvedBy` is a User: no bots
    assert read_back.comments[1].body == "Fixed in abc1234."


def test_people_resolving_and_replying_read_back_with_their_logins(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    client.post(client.read().info, [comment(1, 5)])
    thread_id = gh.threads(7)[0].id

    gh.person_replies(thread_id, "reviewflow: dismiss not a bug", "alice")
    gh.person_resolves(thread_id, "bob")

    thread = client.read().threads[0]
    assert (thread.resolved, thread.resolved_by) == (True, "bob")
    assert [(c.author, c.body) for c in thread.comments[1:]] == [
        ("alice", "reviewflow: dismiss not a bug")
    ]
    assert thread.comments[0].id == str(gh.threads(7)[0].comments[0].id)


def test_write_note_creates_then_edits_in_place(gh: FakeGitHub, client: GitHubClient) -> None:
    client.write_note(None, "summary v1")
    (note,) = client.read().notes

    client.write_note(note, "summary v2")

    assert [(c.id, c.body) for c in gh.issue_comments(7)] == [(int(note.id), "summary v2")]
    assert client.read().notes == (SummaryNote(id=note.id, body="summary v2"),)


def test_notes_are_read_through_every_page(gh: FakeGitHub, client: GitHubClient) -> None:
    for n in range(130):
        gh.add_issue_comment(7, f"comment {n}", "carol")

    notes = client.read().notes

    assert [n.body for n in notes] == [f"comment {n}" for n in range(130)]
    assert gh.calls["issues.list_comments"] == 2


def test_a_refused_token_is_a_setup_error(gh: FakeGitHub) -> None:
    with pytest.raises(PublishSetupError) as caught:
        GitHubClient(gh.ref(7), "ghp_notAToken").read()
    assert str(caught.value) == TOKEN_REFUSED


@pytest.mark.parametrize("repo, number", [(REPO, 8), ("octo-org/elsewhere", 7)])
def test_an_unknown_pull_request_is_a_setup_error_naming_it(
    gh: FakeGitHub, repo: str, number: int
) -> None:
    with pytest.raises(PublishSetupError, match=f"{repo}#{number}.*HTTP 404"):
        GitHubClient(gh.ref(number, repo), TOKEN).read()


def test_bad_setup_is_refused_before_any_request(gh: FakeGitHub) -> None:
    with pytest.raises(PublishSetupError, match="OWNER/NAME"):
        GitHubClient(gh.ref(7, "no-slash"), TOKEN)
    with pytest.raises(PublishSetupError, match="GITHUB_TOKEN"):
        GitHubClient(gh.ref(7), "")
    with pytest.raises(PublishSetupError, match="characters"):
        GitHubClient(gh.ref(7), "ghp_abc\nInjected: header")
    assert gh.requests == []


def test_writes_with_a_read_only_token_are_refused(gh: FakeGitHub, client: GitHubClient) -> None:
    client.post(client.read().info, [comment(1, 5)])
    fork = GitHubClient(gh.ref(7), READ_ONLY)
    state = fork.read()  # reading works

    with pytest.raises(PublishRefused, match=r"HTTP 403.*Resource not accessible by integration"):
        fork.post(state.info, [comment(2, 6)])
    with pytest.raises(PublishRefused, match=r"HTTP 403.*Resource not accessible"):
        fork.write_note(None, "summary")
    with pytest.raises(PublishRefused, match=r"FORBIDDEN.*Resource not accessible"):
        fork.resolve(state.threads[0], "fixed")
    assert len(gh.threads(7)) == 1 and not gh.threads(7)[0].resolved
    assert gh.issue_comments(7) == []


def test_a_secondary_rate_limit_is_transient_with_its_wait(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    info = client.read().info
    gh.secondary_rate_limit(retry_after=1, kind="pulls.create_review")

    with pytest.raises(TransientPublishError, match="rate-limited posting a review") as caught:
        client.post(info, [comment(1, 5)])
    assert caught.value.wait_s == pytest.approx(1.0)
    assert client.post(info, [comment(1, 5)]) == []  # the retry lands


@pytest.mark.parametrize(
    "script, wait_s",
    [
        (lambda gh: gh.too_many_requests(retry_after=3), 3.0),
        (lambda gh: gh.primary_rate_limit(reset_in=30), 30.0),
        (lambda gh: gh.secondary_rate_limit(retry_after=5000), 900.0),
        (lambda gh: gh.fail_next(429, "Too many requests"), 60.0),
    ],
)
def test_rate_limits_are_transient_with_a_bounded_wait(
    gh: FakeGitHub, client: GitHubClient, script: Callable[[FakeGitHub], None], wait_s: float
) -> None:
    script(gh)
    with pytest.raises(TransientPublishError) as caught:
        client.read()
    assert caught.value.wait_s == pytest.approx(wait_s, abs=2)


def test_a_graphql_rate_limit_is_transient(gh: FakeGitHub, client: GitHubClient) -> None:
    gh.graphql_error("RATE_LIMITED", "API rate limit exceeded for installation ID 1.")
    with pytest.raises(TransientPublishError, match="GraphQL RATE_LIMITED") as caught:
        client.read()
    assert caught.value.wait_s >= 1


def test_the_fakes_answers_parse_with_githubkits_models(gh: FakeGitHub) -> None:
    """The answers GitHubClient does not read back, parsed as githubkit would."""
    api = GitHub(TOKEN, base_url=gh.api_url, http_cache=False, auto_retry=False)
    owner, name = REPO.split("/")
    review = api.rest.pulls.create_review(
        owner, name, 7, event="COMMENT", comments=[{"path": "src/app.py", "line": 3, "body": "b"}]
    ).parsed_data
    first = gh.threads(7)[0].comments[0].id
    reply = api.rest.pulls.create_reply_for_review_comment(owner, name, 7, first, body="r")
    created = api.rest.issues.create_comment(owner, name, 7, body="c").parsed_data
    edited = api.rest.issues.update_comment(owner, name, created.id, body="d").parsed_data

    assert (review.state, review.commit_id) == ("COMMENTED", HEAD_SHA)
    assert reply.parsed_data.in_reply_to_id == first
    assert (edited.id, edited.body, edited.user and edited.user.login) == (created.id, "d", BOT)


def test_server_errors_and_unreachable_servers_are_transient(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    gh.server_error(502)
    with pytest.raises(TransientPublishError, match="HTTP 502"):
        client.read()

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    refused = RequestRef.model_validate(
        {**gh.ref(7).model_dump(), "api_url": f"http://127.0.0.1:{port}"}
    )
    with pytest.raises(TransientPublishError, match="could not reach GitHub"):
        GitHubClient(refused, TOKEN).read()


def test_a_server_that_never_answers_times_out_as_transient(gh: FakeGitHub) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        api_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        ref = RequestRef.model_validate({**gh.ref(7).model_dump(), "api_url": api_url})
        with pytest.raises(TransientPublishError, match="did not answer"):
            GitHubClient(ref, TOKEN, timeout=0.2).read()


def test_graphql_not_found_on_a_write_is_refused(gh: FakeGitHub, client: GitHubClient) -> None:
    client.post(client.read().info, [comment(1, 5)])
    gone = client.read().threads[0].model_copy(update={"id": "PRRT_deleted"})
    with pytest.raises(PublishRefused, match="NOT_FOUND"):
        client.resolve(gone, "fixed")


def test_enterprise_server_rest_and_graphql_under_its_prefixes() -> None:
    with FakeGitHub(prefix="/api/v3", api_versions=("2022-11-28",)) as gh:
        gh.add_pull(3, commentable=LINES)
        client = GitHubClient(gh.ref(3), TOKEN)
        assert client.post(client.read().info, [comment(1, 5)]) == []
        client.resolve(client.read().threads[0], "fixed")
        client.write_note(None, "summary")

        assert gh.api_url.endswith("/api/v3")
        assert gh.threads(3)[0].resolved and len(gh.issue_comments(3)) == 1
        paths = {r.path for r in gh.requests}
        assert "/api/graphql" in paths
        assert all(p == "/api/graphql" or p.startswith("/api/v3/repos/") for p in paths)
        rest = [r for r in gh.requests if r.path != "/api/graphql"]
        assert {r.headers["x-github-api-version"] for r in rest} == {"2022-11-28"}
        assert all(r.headers["authorization"] == f"token {TOKEN}" for r in gh.requests)


def _failures(gh: FakeGitHub, client: GitHubClient) -> Iterator[PublishError]:
    scenarios: list[tuple[Callable[[], None], Callable[[], object]]] = [
        (lambda: None, lambda: GitHubClient(gh.ref(7), TOKEN + "x").read()),
        (lambda: None, lambda: GitHubClient(gh.ref(99), TOKEN).read()),
        (lambda: None, lambda: GitHubClient(gh.ref(7), READ_ONLY).write_note(None, "x")),
        (
            lambda: gh.fail_next(403, f"token {TOKEN} may not write"),
            lambda: client.write_note(None, "x"),
        ),
        (gh.secondary_rate_limit, client.read),
        (lambda: gh.server_error(503), client.read),
    ]
    for script, action in scenarios:
        script()
        with pytest.raises(PublishError) as caught:
            action()
        yield caught.value


def test_the_token_appears_in_no_failure(gh: FakeGitHub, client: GitHubClient) -> None:
    failures = list(_failures(gh, client))

    assert len(failures) == 6
    for failure in failures:
        assert TOKEN not in str(failure) and TOKEN not in repr(failure)
        assert failure.__cause__ is None and failure.__suppress_context__
    assert "[REDACTED] may not write" in str(failures[3])


def test_calls_count_every_request_exactly(gh: FakeGitHub, client: GitHubClient) -> None:
    info = client.read().info
    client.post(info, [comment(1, 5), comment(2, 999)])  # refused batch, then one by one
    gh.server_error(500)
    with pytest.raises(TransientPublishError):
        client.write_note(None, "summary")
    client.write_note(None, "summary")
    client.resolve(client.read().threads[0], "fixed")

    assert client.calls == len(gh.requests) == 3 + 3 + 2 + 3 + 1


def test_a_thread_of_more_than_100_comments_is_read_through_every_page(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    marked = comment(1, 5).model_copy(update={"body": finding_marker("a" * 64) + "\nfinding 1"})
    client.post(client.read().info, [marked, comment(2, 6)])
    long_thread = gh.threads(7)[0].id
    for n in range(130):
        gh.person_replies(long_thread, f"chatter {n}", "alice")
    gh.person_replies(long_thread, "reviewflow: dismiss not a bug", "bob")

    threads = {t.id: t for t in client.read().threads}
    comments = threads[long_thread].comments
    assert len(comments) == 132 and comments[-1].body == "reviewflow: dismiss not a bug"
    assert [c.body for c in comments[1:131]] == [f"chatter {n}" for n in range(130)]
    assert comments[0].body == marked.body and len(threads[gh.threads(7)[1].id].comments) == 1
    assert dismissed_in(threads.values()) == {"a" * 64: "dismissed by @bob: not a bug"}
