"""What the fake Bitbucket Cloud (`fake_bitbucket.FakeBitbucket`) knows: users and their tokens,
repositories with their commits, pull requests with their diff and comments, kept in the JSON
shapes Bitbucket Cloud's API 2.0 answers with (after real captures: a comment's `content` with
`raw` and the `html` Bitbucket rendered, `inline` with `from`/`to`/`start_from`/`start_to`,
`parent`, `resolution`, 12-hex commit prefixes in a pull request's `source`/`destination`), and
what each endpoint does to them (`ApiError` for Bitbucket's refusals).

A comment's `html` is rendered as CommonMark with HTML escaped (markdown-it-py), close to what
Bitbucket shows: a test can see what a reader of the pull request would see."""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from markdown_it import MarkdownIt

Json = dict[str, Any]
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


class ApiError(Exception):
    """Bitbucket's error answer: `{"type": "error", "error": {"message": ...}}`."""

    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        error: Json = {"message": message}
        if detail is not None:
            error["detail"] = detail
        self.body: Json = {"type": "error", "error": error}


@dataclass
class Pull:
    id: int
    repo: str  # WORKSPACE/REPO_SLUG
    source_branch: str
    destination_branch: str
    source_hash: str  # full hashes; the API names them by their first 12 hex digits
    destination_hash: str
    diff: str  # the pull request's unified diff, as `git diff destination...source`
    comments: list[Json] = field(default_factory=list)


def diff_of(commentable: Mapping[str, Iterable[int]]) -> str:
    """A unified diff adding each of `commentable`'s lines (one hunk per consecutive run)."""
    out = []
    for path, wanted in commentable.items():
        out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
        lines = sorted(set(wanted))
        runs: list[list[int]] = []
        for line in lines:
            if runs and line == runs[-1][-1] + 1:
                runs[-1].append(line)
            else:
                runs.append([line])
        for run in runs:
            out.append(f"@@ -{run[0] - 1},0 +{run[0]},{len(run)} @@")
            out += [f"+line {n}" for n in run]
    return "\n".join(out) + "\n"


def hunk_lines(diff: str) -> dict[str, set[int]]:
    """The new-side lines each file's hunks show (context and added lines)."""
    out: dict[str, set[int]] = {}
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
            out.setdefault(path, set())
        elif line.startswith("@@ "):
            new = line.split(" ")[2].lstrip("+").split(",")
            start, count = int(new[0]), int(new[1]) if len(new) > 1 else 1
            out[path].update(range(start, start + count))
    return out


class BitbucketState:
    """The fake's state; every method holds `lock` (the server's threads share it)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.origin = ""  # the server's http://host:port, set once it listens
        self._users: dict[str, Json] = {}
        self._tokens: dict[str, tuple[str, bool]] = {}
        self._repos: dict[str, dict[str, str]] = {}  # full name -> full commit hashes
        self._pulls: dict[tuple[str, int], Pull] = {}
        self._ids = itertools.count(700001)
        self._clock = itertools.count(1)

    # -- test side ---------------------------------------------------------------------------

    def add_token(self, token: str, nickname: str, *, write: bool = True) -> None:
        """An access token acting as `nickname`; `write=False`: pull requests read, not write
        (every write answers 403, as Bitbucket does for a token lacking `pullrequest:write`)."""
        with self.lock:
            self._user(nickname)
            self._tokens[token] = (nickname, write)

    def add_pull_request(
        self,
        repo: str,
        number: int,
        *,
        source_hash: str,
        destination_hash: str,
        commentable: Mapping[str, Iterable[int]] | None = None,
        diff: str | None = None,
        source_branch: str = "feature",
        destination_branch: str = "main",
    ) -> Pull:
        """Pull request #`number` of `repo`; its diff is `diff`, else one adding each of
        `commentable`'s lines."""
        with self.lock:
            pull = Pull(
                id=number,
                repo=repo,
                source_branch=source_branch,
                destination_branch=destination_branch,
                source_hash=source_hash,
                destination_hash=destination_hash,
                diff=diff if diff is not None else diff_of(commentable or {}),
            )
            self._add_commits(repo, source_hash, destination_hash)
            self._pulls[(repo, number)] = pull
            return pull

    def push(
        self, repo: str, number: int, source_hash: str, destination_hash: str, diff: str
    ) -> None:
        """A push to the source branch: new commits and diff (comments stay where they are)."""
        with self.lock:
            pull = self._pulls[(repo, number)]
            pull.source_hash, pull.destination_hash, pull.diff = source_hash, destination_hash, diff
            self._add_commits(repo, source_hash, destination_hash)

    def person_comments(self, repo: str, number: int, body: str, nickname: str) -> Json:
        with self.lock:
            return self._create(self._pulls[(repo, number)], self._user(nickname), body)

    def person_replies(self, comment_id: str, body: str, nickname: str) -> Json:
        with self.lock:
            pull, parent = self._find_anywhere(int(comment_id))
            return self._create(pull, self._user(nickname), body, parent=parent)

    def person_resolves(self, comment_id: str, nickname: str) -> None:
        with self.lock:
            _, comment = self._find_anywhere(int(comment_id))
            comment["resolution"] = self._resolution(self._user(nickname))

    def person_reopens(self, comment_id: str) -> None:
        """`DELETE .../comments/{id}/resolve`: the comment thread open again."""
        with self.lock:
            _, comment = self._find_anywhere(int(comment_id))
            comment.pop("resolution", None)

    def comments(self, repo: str, number: int) -> list[Json]:
        with self.lock:
            return copy.deepcopy(self._pulls[(repo, number)].comments)

    def outside_diff(self, repo: str, number: int) -> list[Json]:
        """Inline comments on a line the pull request's diff does not show (Bitbucket keeps
        them; its diff view hides them)."""
        with self.lock:
            pull = self._pulls[(repo, number)]
            shown = hunk_lines(pull.diff)
            return [
                c
                for c in pull.comments
                if c.get("inline") and c["inline"]["to"] not in shown.get(c["inline"]["path"], ())
            ]

    # -- the API's side ----------------------------------------------------------------------

    def user_of(self, token: str) -> tuple[str, bool] | None:
        with self.lock:
            return self._tokens.get(token)

    def find(self, repo: str, number: str) -> Pull:
        with self.lock:
            if repo not in self._repos:
                raise ApiError(404, f"Repository {repo} not found")
            pull = self._pulls.get((repo, int(number))) if number.isdigit() else None
            if pull is None:
                raise ApiError(404, f"Pull request {number} not found")
            return pull

    def commit_json(self, repo: str, prefix: str) -> Json:
        with self.lock:
            if repo not in self._repos:
                raise ApiError(404, f"Repository {repo} not found")
            found = [h for h in self._repos[repo].values() if h.startswith(prefix)]
            if len(prefix) < 4 or len(found) != 1:
                raise ApiError(404, f"Commit not found: {prefix}")
            return {
                "type": "commit",
                "hash": found[0],
                "links": {"self": {"href": self._api(f"repositories/{repo}/commit/{found[0]}")}},
                "message": "a commit\n",
            }

    def pull_json(self, pull: Pull) -> Json:
        with self.lock:
            base = self._api(f"repositories/{pull.repo}/pullrequests/{pull.id}")
            return {
                "type": "pullrequest",
                "id": pull.id,
                "title": f"Pull request {pull.id}",
                "state": "OPEN",
                "source": self._side(pull.repo, pull.source_branch, pull.source_hash),
                "destination": self._side(
                    pull.repo, pull.destination_branch, pull.destination_hash
                ),
                "links": {
                    "self": {"href": base},
                    "html": {"href": f"{self.origin}/{pull.repo}/pull-requests/{pull.id}"},
                    "comments": {"href": f"{base}/comments"},
                    "diff": {"href": f"{base}/diff"},
                },
                "comment_count": len(pull.comments),
            }

    def create_comment(self, pull: Pull, nickname: str, data: Json) -> Json:
        """POST .../comments: a top-level comment, an inline one, or a reply (`parent`)."""
        with self.lock:
            raw = (data.get("content") or {}).get("raw")
            if not isinstance(raw, str) or not raw:
                raise ApiError(400, "content.raw: This field is required.")
            parent = None
            if data.get("parent"):
                parent = self._find(pull, int(data["parent"]["id"]))
            inline = data.get("inline")
            if inline is not None:
                inline = _checked_inline(inline)
            return self._create(pull, self._user(nickname), raw, inline=inline, parent=parent)

    def edit_comment(self, pull: Pull, comment_id: str, nickname: str, data: Json) -> Json:
        with self.lock:
            comment = self._find(pull, int(comment_id))
            if comment["user"]["nickname"] != nickname:
                raise ApiError(403, "You can only edit your own comments.")
            raw = (data.get("content") or {}).get("raw")
            if isinstance(raw, str) and raw:
                comment["content"] = _content(raw)
                comment["updated_on"] = self._now()
            return copy.deepcopy(comment)

    def resolve(self, pull: Pull, comment_id: str, nickname: str) -> Json:
        """POST .../comments/{id}/resolve, with the answers Bitbucket was seen giving: 403 for a
        reply, 409 for a thread already resolved."""
        with self.lock:
            comment = self._find(pull, int(comment_id))
            if comment.get("parent"):
                raise ApiError(403, "Comment is not a top-level comment")
            if comment.get("resolution"):
                raise ApiError(409, "Comment has already been resolved.")
            comment["resolution"] = self._resolution(self._user(nickname))
            return copy.deepcopy(comment["resolution"])

    # -- inside ------------------------------------------------------------------------------

    def _create(
        self,
        pull: Pull,
        user: Json,
        raw: str,
        *,
        inline: Json | None = None,
        parent: Json | None = None,
    ) -> Json:
        cid = next(self._ids)
        now = self._now()
        link = self._api(f"repositories/{pull.repo}/pullrequests/{pull.id}/comments/{cid}")
        comment: Json = {
            "id": cid,
            "type": "pullrequest_comment",
            "created_on": now,
            "updated_on": now,
            "content": _content(raw),
            "user": copy.deepcopy(user),
            "deleted": False,
            "pending": False,
            "links": {
                "self": {"href": link},
                "html": {
                    "href": f"{self.origin}/{pull.repo}/pull-requests/{pull.id}#comment-{cid}"
                },
            },
            "pullrequest": {"type": "pullrequest", "id": pull.id, "title": f"PR {pull.id}"},
        }
        if parent is not None:
            comment["parent"] = {"id": parent["id"], "links": parent["links"]}
            inline = parent.get("inline")  # a reply sits where its thread does
        if inline is not None:
            comment["inline"] = copy.deepcopy(inline)
        pull.comments.append(comment)
        return copy.deepcopy(comment)

    def _find(self, pull: Pull, comment_id: int) -> Json:
        for comment in pull.comments:
            if comment["id"] == comment_id:
                return comment
        raise ApiError(404, "Comment not found")

    def _find_anywhere(self, comment_id: int) -> tuple[Pull, Json]:
        for pull in self._pulls.values():
            for comment in pull.comments:
                if comment["id"] == comment_id:
                    return pull, comment
        raise KeyError(comment_id)

    def _resolution(self, user: Json) -> Json:
        return {
            "type": "comment_resolution",
            "user": copy.deepcopy(user),
            "created_on": self._now(),
        }

    def _side(self, repo: str, branch: str, full: str) -> Json:
        short = full[:12]
        return {
            "branch": {"name": branch},
            "commit": {
                "type": "commit",
                "hash": short,
                "links": {"self": {"href": self._api(f"repositories/{repo}/commit/{short}")}},
            },
            "repository": {"type": "repository", "full_name": repo, "name": repo.split("/")[1]},
        }

    def _add_commits(self, repo: str, *hashes: str) -> None:
        commits = self._repos.setdefault(repo, {})
        for full in hashes:
            commits[full] = full

    def _user(self, nickname: str) -> Json:
        if nickname not in self._users:
            uuid = f"{{{len(self._users) + 1:08d}-0000-4000-8000-000000000000}}"
            self._users[nickname] = {
                "type": "user",
                "display_name": nickname.title(),
                "nickname": nickname,
                "uuid": uuid,
                "account_id": f"557058:{len(self._users) + 1:08d}",
                "links": {"self": {"href": self._api(f"users/{uuid}")}},
            }
        return self._users[nickname]

    def _api(self, path: str) -> str:
        return f"{self.origin}/2.0/{path}"

    def _now(self) -> str:
        return (_EPOCH + timedelta(seconds=next(self._clock))).isoformat()


def _content(raw: str) -> Json:
    return {"type": "rendered", "raw": raw, "markup": "markdown", "html": _MARKDOWN.render(raw)}


def _checked_inline(inline: Json) -> Json:
    """`inline` as Bitbucket keeps it, or its 400 (a path, a line, `start_to` <= `to`)."""
    path, to, start_to = inline.get("path"), inline.get("to"), inline.get("start_to")
    if not isinstance(path, str) or not path:
        raise ApiError(400, "inline.path: This field is required.")
    if not isinstance(to, int) or to < 1:
        raise ApiError(400, "inline.to: A valid integer is required.")
    if start_to is not None and (not isinstance(start_to, int) or start_to > to):
        raise ApiError(400, '"start_to" must be less than or equal to "to"')
    return {"from": None, "to": to, "path": path, "start_from": None, "start_to": start_to}
