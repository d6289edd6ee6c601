"""The fake Gitea's state: repositories' pull requests, their reviews and review comments, their
issue comments, and the JSON Gitea answers for each (the fields `gitea_api.py`'s models read,
and a few more, shaped as Gitea 1.2x sends them).

Stored as Gitea stores them: a review comment belongs to one review and sits on a path and a
line (`position`); a reply through `comments/{id}/replies` joins the review of the comment it
answers at the same line; resolving sets the comment's `resolver`. Gitea does not check a
comment's line against the diff: such a comment is kept with an empty `diff_hunk` and counted
in `off_diff`, so tests can prove the client never sent one.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body: Json = {"message": message, "url": "https://gitea.example/api/swagger"}


@dataclass
class Pull:
    owner: str
    name: str
    number: int
    head_sha: str
    base_sha: str
    commentable: dict[str, set[int]]
    head_ref: str = "topic"
    base_ref: str = "main"
    reviews: list[Json] = field(default_factory=list)
    comments: list[Json] = field(default_factory=list)  # review comments, every review's
    notes: list[Json] = field(default_factory=list)  # issue comments
    off_diff: int = 0


def user_json(login: str) -> Json:
    return {"id": abs(hash(login)) % 10_000, "login": login, "username": login, "full_name": ""}


class GiteaState:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.pulls: dict[tuple[str, str, int], Pull] = {}
        self.tokens: dict[str, tuple[str, bool]] = {}  # token -> (login, may write)
        self._ids = itertools.count(1001)
        self.replies_endpoint = True  # Gitea 1.27+
        self.resolve_endpoint = True  # Gitea 1.26+; Forgejo has none

    @property
    def web(self) -> str:
        raise NotImplementedError

    def add_token(self, token: str, login: str, *, write: bool = True) -> None:
        self.tokens[token] = (login, write)

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str,
        base_sha: str,
        commentable: dict[str, Any] | None = None,
    ) -> Pull:
        owner, _, name = repo.partition("/")
        pull = Pull(owner, name, number, head_sha, base_sha, _sets(commentable))
        with self.lock:
            self.pulls[(owner.lower(), name.lower(), number)] = pull
        return pull

    def push(self, repo: str, number: int, head_sha: str, commentable: dict[str, Any]) -> None:
        with self.lock:
            pull = self.find(*repo.split("/"), number)
            pull.head_sha, pull.commentable = head_sha, _sets(commentable)

    def find(self, owner: str, name: str, number: int) -> Pull:
        pull = self.pulls.get((owner.lower(), name.lower(), number))
        if pull is None:
            raise ApiError(404, "The target couldn't be found.")
        return pull

    def pull_json(self, pull: Pull) -> Json:
        repo = f"{self.web}/{pull.owner}/{pull.name}"
        return {
            "id": pull.number + 500,
            "number": pull.number,
            "state": "open",
            "title": "a change",
            "html_url": f"{repo}/pulls/{pull.number}",
            "diff_url": f"{repo}/pulls/{pull.number}.diff",
            "merge_base": pull.base_sha,
            "base": {"label": pull.base_ref, "ref": pull.base_ref, "sha": pull.base_sha},
            "head": {"label": pull.head_ref, "ref": pull.head_ref, "sha": pull.head_sha},
            "user": user_json("author"),
        }

    def diff_text(self, pull: Pull) -> str:
        """A unified diff whose hunks add exactly the commentable lines (runs of them)."""
        out: list[str] = []
        for path, lines in sorted(pull.commentable.items()):
            out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
            for start, count in _runs(sorted(lines)):
                out.append(f"@@ -{start},0 +{start},{count} @@")
                out += [f"+line {n}" for n in range(start, start + count)]
        return "\n".join(out) + "\n"

    def create_review(self, pull: Pull, user: str, data: Json) -> Json:
        """As `CreatePullReview`: an event other than APPROVED, REQUEST_CHANGES or COMMENT
        (none too) leaves the review PENDING, seen by its author alone; all but APPROVED and
        COMMENT need a body."""
        comments = data.get("comments") or []
        event = str(data.get("event") or "")
        state = event if event in ("APPROVED", "REQUEST_CHANGES", "COMMENT") else "PENDING"
        has_body = bool(str(data.get("body") or "").strip())
        if state == "COMMENT" and not comments and not has_body:
            raise ApiError(422, "review event COMMENT requires a body or a comment")
        if state in ("REQUEST_CHANGES", "PENDING") and not has_body:
            raise ApiError(422, f"review event {event} requires a body")
        review = {
            "id": next(self._ids),
            "user": user_json(user),
            "state": state,
            "body": str(data.get("body") or ""),
            "commit_id": str(data.get("commit_id") or pull.head_sha),
            "comments_count": 0,
            "official": False,
            "stale": False,
            "dismissed": False,
            "html_url": f"{self.web}/{pull.owner}/{pull.name}/pulls/{pull.number}",
        }
        pull.reviews.append(review)
        for item in comments:
            self._comment(
                pull,
                review,
                user,
                str(item.get("path") or ""),
                int(item.get("new_position") or 0),
                str(item.get("body") or ""),
            )
        return review

    def reply(self, pull: Pull, comment_id: int, user: str, body: str) -> Json:
        first = self.review_comment(pull, comment_id)
        review = next(r for r in pull.reviews if r["id"] == first["pull_request_review_id"])
        return self._comment(pull, review, user, first["path"], first["position"], body)

    def set_resolver(self, pull: Pull, comment_id: int, user: str | None) -> None:
        self.review_comment(pull, comment_id)["resolver"] = (
            None if user is None else user_json(user)
        )

    def review_comment(self, pull: Pull, comment_id: int) -> Json:
        found = next((c for c in pull.comments if c["id"] == comment_id), None)
        if found is None:
            raise ApiError(404, "The target couldn't be found.")
        return found

    def comments_of(self, pull: Pull, review_id: int) -> list[Json]:
        if not any(r["id"] == review_id for r in pull.reviews):
            raise ApiError(404, "The target couldn't be found.")
        return [c for c in pull.comments if c["pull_request_review_id"] == review_id]

    def create_note(self, pull: Pull, user: str, body: str) -> Json:
        note = {
            "id": next(self._ids),
            "body": body,
            "user": user_json(user),
            "html_url": f"{self.web}/{pull.owner}/{pull.name}/pulls/{pull.number}",
        }
        pull.notes.append(note)
        return note

    def edit_note(self, owner: str, name: str, note_id: int, user: str, body: str) -> Json:
        for (o, n, _), pull in self.pulls.items():
            if (o, n) != (owner.lower(), name.lower()):
                continue
            for note in pull.notes:
                if note["id"] == note_id:
                    if note["user"]["login"] != user:
                        raise ApiError(403, "user should be the poster or an admin")
                    note["body"] = body
                    return note
        raise ApiError(404, "The target couldn't be found.")

    def _comment(
        self, pull: Pull, review: Json, user: str, path: str, line: int, body: str
    ) -> Json:
        on_diff = line in pull.commentable.get(path, set())
        pull.off_diff += not on_diff
        comment = {
            "id": next(self._ids),
            "body": body,
            "user": user_json(user),
            "resolver": None,
            "pull_request_review_id": review["id"],
            "path": path,
            "commit_id": pull.head_sha,
            "original_commit_id": pull.head_sha,
            "position": line,
            "original_position": 0,
            "diff_hunk": f"@@ -{line},0 +{line},1 @@\n+line {line}" if on_diff else "",
            "html_url": f"{review['html_url']}/files#issuecomment-{review['id']}",
        }
        pull.comments.append(comment)
        review["comments_count"] += 1
        return comment


def _sets(commentable: dict[str, Any] | None) -> dict[str, set[int]]:
    return {path: set(lines) for path, lines in (commentable or {}).items()}


def _runs(lines: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for line in lines:
        if runs and runs[-1][0] + runs[-1][1] == line:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    return runs
