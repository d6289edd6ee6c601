"""What the fake Bitbucket Data Center (`fake_bitbucket_dc.FakeBitbucketDC`) knows: tokens,
repositories, pull requests with their effective diff, comments and activities, kept in the
JSON shapes REST API 1.0 answers with, and what each endpoint does to them (`ApiError` for
Bitbucket's refusals, in its `{"errors": [...]}` envelope)."""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

ANCHOR_REFUSED = "The line anchor is not part of the pull request's diff"
_EPOCH_MS = 1_767_225_600_000  # 2026-01-01


class ApiError(Exception):
    def __init__(self, status: int, message: str, exception: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"errors": [{"context": None, "message": message, "exceptionName": exception}]}


@dataclass
class PullRequest:
    project: str
    slug: str
    id: int
    head_sha: str
    target_sha: str
    merge_base: str
    lines: dict[str, dict[int, str]]  # new path -> new-side line -> ADDED | CONTEXT
    renamed: dict[str, str]  # new path -> old path
    source_branch: str = "feature"
    target_branch: str = "main"
    comments: dict[int, Json] = field(default_factory=dict)  # every comment by ID
    activities: list[Json] = field(default_factory=list)  # oldest first


class BitbucketState:
    """The fake's state; every method holds `lock` (the server's threads share it)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.base_url = ""
        self._tokens: dict[str, tuple[str, bool]] = {}
        self._repos: set[tuple[str, str]] = set()
        self._prs: dict[tuple[str, str, int], PullRequest] = {}
        self._ids = itertools.count(101)
        self._clock = itertools.count(1)

    # -- test side ---------------------------------------------------------------------------

    def add_token(self, token: str, username: str, *, write: bool = True) -> None:
        """An HTTP access token of `username`; `write=False`: Repository read only."""
        with self.lock:
            self._tokens[token] = (username, write)

    def add_pull_request(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str,
        target_sha: str,
        merge_base: str = "",
        commentable: Mapping[str, Iterable[int]] | None = None,
        context: Mapping[str, Iterable[int]] | None = None,
        renamed: Mapping[str, str] | None = None,
        source_branch: str = "feature",
    ) -> PullRequest:
        """Pull request `number` of `repo` (`PROJECT/slug`): `commentable` lines are added
        lines of its diff, `context` lines its context lines."""
        project, _, slug = repo.partition("/")
        with self.lock:
            self._repos.add((project, slug))
            pr = PullRequest(
                project,
                slug,
                number,
                head_sha,
                target_sha,
                merge_base or target_sha,
                _lines(commentable, context),
                dict(renamed or {}),
                source_branch=source_branch,
            )
            self._prs[(project, slug, number)] = pr
            return pr

    def push(
        self,
        repo: str,
        number: int,
        head_sha: str,
        commentable: Mapping[str, Iterable[int]],
        context: Mapping[str, Iterable[int]] | None = None,
    ) -> None:
        """A new head: a new diff (comments keep their anchors, as Bitbucket's do)."""
        with self.lock:
            pr = self.pull_request(repo, number)
            pr.head_sha = head_sha
            pr.lines = _lines(commentable, context)

    def person_comments(self, repo: str, number: int, text: str, user: str) -> Json:
        with self.lock:
            return self.create_comment(self.pull_request(repo, number), user, {"text": text})

    def person_replies(self, repo: str, number: int, comment_id: str, text: str, user: str) -> Json:
        with self.lock:
            data = {"text": text, "parent": {"id": int(comment_id)}}
            return self.create_comment(self.pull_request(repo, number), user, data)

    def person_resolves(self, repo: str, number: int, comment_id: str, user: str) -> None:
        with self.lock:
            pr = self.pull_request(repo, number)
            version = pr.comments[int(comment_id)]["version"]
            self.update_comment(
                pr, int(comment_id), user, {"version": version, "threadResolved": True}
            )

    def person_reopens(self, repo: str, number: int, comment_id: str, user: str) -> None:
        with self.lock:
            pr = self.pull_request(repo, number)
            version = pr.comments[int(comment_id)]["version"]
            self.update_comment(
                pr, int(comment_id), user, {"version": version, "threadResolved": False}
            )

    def pull_request(self, repo: str, number: int) -> PullRequest:
        project, _, slug = repo.partition("/")
        return self._prs[(project, slug, number)]

    def roots(self, repo: str, number: int) -> list[Json]:
        """Root comments, oldest first (live: a test reads, never edits)."""
        with self.lock:
            pr = self.pull_request(repo, number)
            return [c for c in pr.comments.values() if "parent_id" not in c]

    # -- server side -------------------------------------------------------------------------

    def user_of(self, token: str) -> tuple[str, bool] | None:
        return self._tokens.get(token)

    def find(self, project: str, slug: str, number: str) -> PullRequest:
        if (project, slug) not in self._repos:
            if not any(p == project for p, _ in self._repos):
                raise ApiError(404, f"Project {project} does not exist.")
            raise ApiError(404, f"Repository {project}/{slug} does not exist.")
        pr = self._prs.get((project, slug, int(number))) if number.isdigit() else None
        if pr is None:
            raise ApiError(404, f"Pull request {number} does not exist in {project}/{slug}.")
        return pr

    def pr_json(self, pr: PullRequest) -> Json:
        repo = {"slug": pr.slug, "project": {"key": pr.project}}
        web = f"{self.base_url}/projects/{pr.project}/repos/{pr.slug}/pull-requests/{pr.id}"
        return {
            "id": pr.id,
            "version": 0,
            "title": f"Pull request {pr.id}",
            "state": "OPEN",
            "open": True,
            "fromRef": _ref(pr.source_branch, pr.head_sha, repo),
            "toRef": _ref(pr.target_branch, pr.target_sha, repo),
            "links": {"self": [{"href": web}]},
        }

    def diff_json(self, pr: PullRequest) -> Json:
        """The effective diff: one hunk per file, consecutive lines of a type in a segment."""
        diffs = []
        for path, lines in pr.lines.items():
            segments: list[Json] = []
            for number in sorted(lines):
                kind = lines[number]
                line = {"source": number, "destination": number, "line": f"line {number}"}
                if segments and segments[-1]["type"] == kind:
                    segments[-1]["lines"].append(line)
                else:
                    segments.append({"type": kind, "lines": [line], "truncated": False})
            source = pr.renamed.get(path)
            diffs.append(
                {
                    "source": _path(source) if source else _path(path),
                    "destination": _path(path),
                    "hunks": [{"segments": segments, "truncated": False}],
                    "truncated": False,
                }
            )
        return {"fromHash": pr.merge_base, "toHash": pr.head_sha, "diffs": diffs}

    def activities(self, pr: PullRequest) -> list[Json]:
        """Newest first, each comment as it is now (its replies nested)."""
        return [self._activity_json(pr, a) for a in reversed(pr.activities)]

    def comment_json(self, pr: PullRequest, comment_id: int) -> Json:
        comment = pr.comments.get(comment_id)
        if comment is None:
            raise ApiError(404, f"Comment {comment_id} does not exist.")
        out = {
            k: copy.deepcopy(v) for k, v in comment.items() if k not in ("parent_id", "reply_ids")
        }
        out["comments"] = [self.comment_json(pr, i) for i in comment["reply_ids"]]
        return out

    def create_comment(self, pr: PullRequest, user: str, data: Json) -> Json:
        text = data.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Please enter a non-empty value", "InvalidEntityException")
        parent = data.get("parent")
        parent_id = int(parent["id"]) if isinstance(parent, dict) and "id" in parent else None
        if parent_id is not None and parent_id not in pr.comments:
            raise ApiError(404, f"Comment {parent_id} does not exist.")
        anchor = data.get("anchor")
        if anchor is not None and parent_id is None:
            self._check_anchor(pr, anchor)
        comment = self._new_comment(user, text)
        if parent_id is not None:
            comment["parent_id"] = parent_id
            pr.comments[parent_id]["reply_ids"].append(comment["id"])
        elif anchor is not None:
            comment["anchor"] = {**anchor, "orphaned": False}
        pr.comments[comment["id"]] = comment
        pr.activities.append(
            {
                "id": next(self._ids),
                "createdDate": comment["createdDate"],
                "user": _user(user),
                "action": "COMMENTED",
                "commentAction": "REPLIED" if parent_id is not None else "ADDED",
                "comment_id": comment["id"],
            }
        )
        return self.comment_json(pr, comment["id"])

    def update_comment(self, pr: PullRequest, comment_id: int, user: str, data: Json) -> Json:
        comment = pr.comments.get(comment_id)
        if comment is None:
            raise ApiError(404, f"Comment {comment_id} does not exist.")
        if data.get("version") != comment["version"]:
            raise ApiError(
                409,
                "You are attempting to modify a comment based on out-of-date information.",
                "com.atlassian.bitbucket.comment.CommentOutOfDateException",
            )
        if "text" in data and comment["author"]["name"] != user:
            raise ApiError(401, "Only the author of a comment may update its text.")
        if "text" in data:
            comment["text"] = str(data["text"])
        if data.get("threadResolved") is True and not comment["threadResolved"]:
            comment["threadResolved"] = True
            comment["threadResolver"] = _user(user)
            comment["threadResolvedDate"] = self._now()
        elif data.get("threadResolved") is False and comment["threadResolved"]:
            comment["threadResolved"] = False  # reopened: no resolver any more
            comment.pop("threadResolver", None)
            comment.pop("threadResolvedDate", None)
        comment["version"] += 1
        comment["updatedDate"] = self._now()
        return self.comment_json(pr, comment_id)

    def _check_anchor(self, pr: PullRequest, anchor: Json) -> None:
        """As Bitbucket: an anchor on the current diff, on one of its lines, of its type."""
        path = anchor.get("path")
        line = anchor.get("line")
        lines = pr.lines.get(path) if isinstance(path, str) else None
        source = pr.renamed.get(path, path) if isinstance(path, str) else None
        if (
            anchor.get("diffType") != "EFFECTIVE"
            or anchor.get("toHash") != pr.head_sha
            or lines is None
            or anchor.get("fileType") != "TO"
            or anchor.get("srcPath", path) != source
            or not isinstance(line, int)
            or lines.get(line) != anchor.get("lineType")
        ):
            raise ApiError(
                400,
                ANCHOR_REFUSED,
                "com.atlassian.bitbucket.validation.ArgumentValidationException",
            )

    def _new_comment(self, user: str, text: str) -> Json:
        now = self._now()
        return {
            "id": next(self._ids),
            "version": 0,
            "text": text,
            "author": _user(user),
            "createdDate": now,
            "updatedDate": now,
            "severity": "NORMAL",
            "state": "OPEN",
            "threadResolved": False,
            "reply_ids": [],
        }

    def _activity_json(self, pr: PullRequest, activity: Json) -> Json:
        out = {k: v for k, v in activity.items() if k != "comment_id"}
        comment = self.comment_json(pr, activity["comment_id"])
        out["comment"] = comment
        if "anchor" in comment:
            out["commentAnchor"] = comment["anchor"]
        return out

    def _now(self) -> int:
        return _EPOCH_MS + next(self._clock) * 1000


def _lines(
    added: Mapping[str, Iterable[int]] | None, context: Mapping[str, Iterable[int]] | None
) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for kind, source in (("CONTEXT", context), ("ADDED", added)):
        for path, numbers in (source or {}).items():
            out.setdefault(path, {}).update(dict.fromkeys(numbers, kind))
    return out


def _path(path: str) -> Json:
    parts = path.split("/")
    return {
        "components": parts,
        "name": parts[-1],
        "parent": "/".join(parts[:-1]),
        "toString": path,
    }


def _ref(branch: str, sha: str, repo: Json) -> Json:
    return {
        "id": f"refs/heads/{branch}",
        "displayId": branch,
        "latestCommit": sha,
        "repository": repo,
    }


def _user(name: str) -> Json:
    return {
        "name": name,
        "slug": name,
        "displayName": name.title(),
        "type": "NORMAL",
        "active": True,
    }
