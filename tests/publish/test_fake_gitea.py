"""The fake Gitea answers as Gitea's routers do (`routers/api/v1/repo/pull_review.go`): the
endpoints a server lacks are routes it does not have, and another's pending review is hidden
from its listing, counted all the same, and not found when asked for."""

from __future__ import annotations

import httpx

from tests.publish.fake_gitea import TOKEN, FakeGitea

HEADERS = {"Authorization": f"token {TOKEN}"}


def test_forgejo_has_no_reply_nor_resolve_route_and_answers_as_for_any_unknown_one() -> None:
    with FakeGitea() as fake:
        fake.forgejo()
        fake.add_pull("acme/app", 7, head_sha="h" * 40, base_sha="b" * 40)
        repo = f"{fake.api_url}/repos/acme/app"
        unknown = httpx.get(f"{repo}/pulls/7/no-such-thing", headers=HEADERS)
        for url in (f"{repo}/pulls/7/comments/5/replies", f"{repo}/pulls/comments/5/resolve"):
            answer = httpx.post(url, json={"body": "x"}, headers=HEADERS)
            assert (answer.status_code, answer.json()) == (404, unknown.json())
            assert "Allow" not in answer.headers


def test_anothers_pending_review_is_counted_but_neither_listed_nor_found() -> None:
    with FakeGitea() as fake:
        pull = fake.add_pull("acme/app", 7, head_sha="h" * 40, base_sha="b" * 40)
        line = {"path": "a.py", "new_position": 1, "body": "draft"}
        pending = fake.create_review(pull, "carol", {"body": "draft", "comments": [line]})
        fake.create_review(pull, "carol", {"event": "COMMENT", "body": "done"})
        reviews = f"{fake.api_url}/repos/acme/app/pulls/7/reviews"
        listed = httpx.get(reviews, headers=HEADERS)
        assert [r["body"] for r in listed.json()] == ["done"]
        assert listed.headers["X-Total-Count"] == "2" and "Link" not in listed.headers
        comments = httpx.get(f"{reviews}/{pending['id']}/comments", headers=HEADERS)
        assert comments.status_code == 404
