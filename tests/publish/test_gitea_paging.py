"""Reading a pull request's reviews page by page as Gitea and Forgejo list them: no `Link`
header, `X-Total-Count` counting others' pending reviews the page leaves out, and a server's
own page size (`[api] MAX_RESPONSE_ITEMS`) below the 50 reviewflow asks for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reviewflow.publish.gitea.client import GiteaClient
from reviewflow.pullrequest.markers import finding_marker
from reviewflow.pullrequest.models import NewComment
from tests.publish.fake_gitea import TOKEN, FakeGitea

REPO, NUMBER = "acme/app", 7
BASE, HEAD = "b" * 40, "h" * 40
APP = "src/app.py"


@pytest.fixture
def gt() -> Iterator[FakeGitea]:
    with FakeGitea() as fake:
        fake.add_pull(REPO, NUMBER, head_sha=HEAD, base_sha=BASE, commentable={APP: range(1, 99)})
        yield fake


def _client(fake: FakeGitea) -> GiteaClient:
    return GiteaClient(fake.ref(REPO, NUMBER), TOKEN, timeout=5.0)


def _people_review(fake: FakeGitea, count: int, event: str = "COMMENT") -> None:
    pull = fake.pull(REPO, NUMBER)
    for n in range(count):
        fake.create_review(pull, "carol", {"event": event, "body": f"looked at it ({n})"})


def _finding(n: int, line: int) -> NewComment:
    body = f"{finding_marker(f'{n:064x}')}\nfinding {n}"
    return NewComment(
        fingerprint=f"fp{n}", path=APP, old_path=APP, start_line=line, end_line=line, body=body
    )


def _pages(fake: FakeGitea) -> list[str]:
    return [r.query["page"] for r in fake.requests if r.kind == "list_reviews"]


def test_a_dismissal_in_a_review_past_the_first_page_is_read(gt: FakeGitea) -> None:
    _people_review(gt, 60)  # the pull request's first 60 reviews: people's
    client = _client(gt)
    client.post(client.read().info, [_finding(1, 5)])  # the 61st: on page 2
    [thread] = client.read().threads
    gt.person_replies(REPO, NUMBER, int(thread.comments[0].id), "reviewflow: dismiss no", "al")
    [thread] = client.read().threads
    assert [(c.body, c.author) for c in thread.comments[1:]] == [("reviewflow: dismiss no", "al")]
    assert _pages(gt)[-2:] == ["1", "2"]


def test_others_pending_reviews_on_a_page_do_not_end_the_reading(gt: FakeGitea) -> None:
    _people_review(gt, 3, event="")  # pending: counted, shown to carol alone
    _people_review(gt, 47)
    client = _client(gt)
    client.post(client.read().info, [_finding(1, 5), _finding(2, 6)])
    assert len(client.read().threads) == 2  # page 1 held 47 of 50, page 2 the finding
    assert _pages(gt)[-2:] == ["1", "2"]


def test_a_server_answering_20_a_page_is_read_to_its_last_page(gt: FakeGitea) -> None:
    gt.max_items = 20
    _people_review(gt, 41)
    client = _client(gt)
    client.post(client.read().info, [_finding(1, 5)])
    assert len(client.read().threads) == 1
    assert _pages(gt) == ["1", "2", "3"] * 2  # 41 reviews, then 42
    assert gt.count("review_comments") == 1


def test_without_a_count_or_a_link_full_pages_are_read_on(gt: FakeGitea) -> None:
    _people_review(gt, 53)
    reviews = gt.pull(REPO, NUMBER).reviews
    client = _client(gt)
    gt.fail(200, kind="list_reviews", body=reviews[:50], headers={})  # a full page, no headers
    client.read()
    assert _pages(gt) == ["1", "2"]
    gt.fail(200, kind="list_reviews", body=reviews[:3], headers={})  # a short one ends it
    client.read()
    assert _pages(gt) == ["1", "2", "1"]


def test_a_link_header_where_a_server_sends_one_decides(gt: FakeGitea) -> None:
    _people_review(gt, 3)
    reviews = gt.pull(REPO, NUMBER).reviews
    last = f'<{gt.api_url}/repos/{REPO}/pulls/{NUMBER}/reviews?page=4&limit=50>; rel="next"'
    gt.fail(200, kind="list_reviews", body=reviews[:1], headers={"Link": last})
    _client(gt).read()
    assert _pages(gt) == ["1", "4"]  # page 4: past the three reviews, empty, and no link
