"""What the fake GitLab (`fake_gitlab.FakeGitLab`) knows: users and tokens, projects, merge
requests with their diff, discussions and notes, kept in the JSON shapes GitLab's API v4 answers
with, and what each endpoint does to them (`ApiError` for GitLab's refusals)."""

from __future__ import annotations

import copy
import hashlib
import itertools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.publish.fake_gitlab_diff import (
    LINE_CODE_REFUSED,
    ApiError,
    added_hunks,
    checked_range,
    walk,
)

__all__ = ["LINE_CODE_REFUSED", "ApiError", "GitLabState", "Json", "MergeRequest"]

Json = dict[str, Any]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class MergeRequest:
    id: int
    iid: int
    project_id: int
    project_path: str
    author: str
    title: str
    source_branch: str
    target_branch: str
    base_sha: str
    start_sha: str
    head_sha: str
    commentable: dict[str, set[int]]  # new path -> new-side lines a position may name
    renamed: dict[str, str]  # new path -> old path
    diffs: dict[str, str] = field(default_factory=dict)  # new path -> its diff's hunks
    discussions: list[Json] = field(default_factory=list)
    version: int = 1


class GitLabState:
    """The fake's state; every method holds `lock` (the server's threads share it)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.base_url = ""  # the instance URL, set once the server listens
        self._users: dict[str, int] = {}
        self._tokens: dict[str, tuple[str, bool]] = {}
        self._paths: dict[str, int] = {}  # project path -> ID
        self._mrs: dict[tuple[int, int], MergeRequest] = {}
        self._ids = itertools.count(1001)
        self._clock = itertools.count(1)

    # -- test side ---------------------------------------------------------------------------

    def add_token(self, token: str, username: str, *, write: bool = True) -> None:
        """A personal access token of `username`; `write=False`: every write answers 403."""
        with self.lock:
            self._user(username)
            self._tokens[token] = (username, write)

    def add_merge_request(
        self,
        project: str,
        iid: int,
        *,
        head_sha: str,
        base_sha: str,
        start_sha: str = "",
        commentable: Mapping[str, Iterable[int]] | None = None,
        renamed: Mapping[str, str] | None = None,
        project_id: int | None = None,
        author: str = "alice",
        source_branch: str = "feature",
        target_branch: str = "main",
        diffs: Mapping[str, str] | None = None,
    ) -> MergeRequest:
        """Merge request !`iid` of project `project` (a path; created, with `project_id` or
        the next ID, unless known). `diffs`: new path -> its unified diff's hunks, which then
        decide the commentable lines; without, each commentable line is an added one."""
        with self.lock:
            if diffs:
                commentable = {p: set(walk(d)) for p, d in diffs.items()}
            pid = self._paths.setdefault(project, project_id or next(self._ids))
            mr = MergeRequest(
                id=next(self._ids),
                iid=iid,
                project_id=pid,
                project_path=project,
                author=self._user(author),
                title=f"Merge request {iid}",
                source_branch=source_branch,
                target_branch=target_branch,
                base_sha=base_sha,
                start_sha=start_sha or base_sha,
                head_sha=head_sha,
                commentable={p: set(lines) for p, lines in (commentable or {}).items()},
                renamed=dict(renamed or {}),
                diffs=dict(diffs or {}),
            )
            self._mrs[(pid, iid)] = mr
            return mr

    def push(
        self,
        iid: int,
        head_sha: str,
        start_sha: str,
        base_sha: str,
        commentable: Mapping[str, Iterable[int]],
        *,
        renamed: Mapping[str, str] | None = None,
        project: str | None = None,
    ) -> None:
        """A push: new diff refs and diff; GitLab's system notes for it (the commit added, a
        diff discussion whose line is gone)."""
        with self.lock:
            mr = self.merge_request(iid, project)
            mr.head_sha, mr.start_sha, mr.base_sha = head_sha, start_sha, base_sha
            mr.commentable = {p: set(lines) for p, lines in commentable.items()}
            mr.renamed = dict(renamed or {})
            mr.diffs = {}
            mr.version += 1
            added = self._note(mr, mr.author, f"added 1 commit\n\n* {head_sha[:8]}")
            self._start(mr, {**added, "system": True})
            for discussion in mr.discussions:
                position = discussion["notes"][0].get("position")
                if position and position["new_line"] not in mr.commentable.get(
                    position["new_path"], set()
                ):
                    text = f"changed this line in version {mr.version} of the diff"
                    discussion["notes"].append({**self._note(mr, mr.author, text), "system": True})

    def person_resolves(self, discussion_id: str, username: str) -> None:
        with self.lock:
            _, discussion = self._discussion_anywhere(discussion_id)
            _set_resolved(discussion, self._user_json(self._user(username)), True, self._now())

    def person_unresolves(self, discussion_id: str, username: str) -> None:
        with self.lock:
            _, discussion = self._discussion_anywhere(discussion_id)
            _set_resolved(discussion, self._user_json(self._user(username)), False, self._now())

    def person_replies(self, discussion_id: str, body: str, username: str) -> Json:
        with self.lock:
            mr, discussion = self._discussion_anywhere(discussion_id)
            return self._reply(mr, discussion, self._user(username), body)

    def person_comments(
        self, iid: int, body: str, username: str, *, project: str | None = None
    ) -> Json:
        """A top-level note by a person."""
        with self.lock:
            mr = self.merge_request(iid, project)
            return self._start(mr, self._note(mr, self._user(username), body))["notes"][0]

    def system_note(self, iid: int, body: str, *, project: str | None = None) -> Json:
        with self.lock:
            mr = self.merge_request(iid, project)
            note = {**self._note(mr, mr.author, body), "system": True}
            return self._start(mr, note)["notes"][0]

    def discussions(self, iid: int, *, project: str | None = None) -> list[Json]:
        with self.lock:
            return copy.deepcopy(self.merge_request(iid, project).discussions)

    def notes(self, iid: int, *, project: str | None = None) -> list[Json]:
        """Every note of the merge request, oldest first."""
        with self.lock:
            return [n for d in self.discussions(iid, project=project) for n in d["notes"]]

    def merge_request(self, iid: int, project: str | None = None) -> MergeRequest:
        with self.lock:
            found = [
                mr
                for mr in self._mrs.values()
                if mr.iid == iid and project in (None, mr.project_path)
            ]
            assert len(found) == 1, f"{len(found)} merge requests !{iid} (name the project)"
            return found[0]

    # -- the API's side ----------------------------------------------------------------------

    def user_of(self, token: str) -> tuple[str, bool] | None:
        with self.lock:
            return self._tokens.get(token)

    def find(self, project: str, iid: str) -> MergeRequest:
        """The merge request at `/projects/:project/merge_requests/:iid`, or GitLab's 404."""
        with self.lock:
            pid = int(project) if project.isdigit() else self._paths.get(project, 0)
            if pid not in self._paths.values():
                raise ApiError(404, "404 Project Not Found")
            mr = self._mrs.get((pid, int(iid))) if iid.isdigit() else None
            if mr is None:
                raise ApiError(404, "404 Not found")
            return mr

    def mr_json(self, mr: MergeRequest) -> Json:
        with self.lock:
            web = f"{self.base_url}/{mr.project_path}/-/merge_requests/{mr.iid}"
            refs = {"base_sha": mr.base_sha, "head_sha": mr.head_sha, "start_sha": mr.start_sha}
            return {
                "id": mr.id,
                "iid": mr.iid,
                "project_id": mr.project_id,
                "title": mr.title,
                "description": "",
                "state": "opened",
                "draft": False,
                "author": self._user_json(mr.author),
                "source_branch": mr.source_branch,
                "target_branch": mr.target_branch,
                "source_project_id": mr.project_id,
                "target_project_id": mr.project_id,
                "sha": mr.head_sha,
                "merge_commit_sha": None,
                "diff_refs": refs,
                "web_url": web,
                "references": {"short": f"!{mr.iid}", "full": f"{mr.project_path}!{mr.iid}"},
                "user_notes_count": sum(not n["system"] for n in self._all_notes(mr)),
                "created_at": _stamp(0),
                "updated_at": _stamp(0),
            }

    def diff_json(self, mr: MergeRequest) -> list[Json]:
        """`GET .../diffs`: one entry per changed file, as GitLab answers."""
        with self.lock:
            return [
                {
                    "old_path": mr.renamed.get(path, path),
                    "new_path": path,
                    "a_mode": "100644",
                    "b_mode": "100644",
                    "new_file": False,
                    "renamed_file": path in mr.renamed,
                    "deleted_file": False,
                    "diff": mr.diffs.get(path) or added_hunks(lines),
                }
                for path, lines in sorted(mr.commentable.items())
            ]

    def create_discussion(self, mr: MergeRequest, username: str, data: Json) -> Json:
        with self.lock:
            body = _body(data)
            position = data.get("position")
            note = self._note(mr, username, body)
            note.update(type="DiscussionNote", resolvable=True)
            if position is not None:
                note.update(type="DiffNote", position=self._position(mr, position))
            return self._start(mr, note, individual=False)

    def reply(self, mr: MergeRequest, discussion_id: str, username: str, data: Json) -> Json:
        with self.lock:
            return self._reply(mr, self._discussion(mr, discussion_id), username, _body(data))

    def set_resolved(self, mr: MergeRequest, discussion_id: str, username: str, value: Any) -> Json:
        with self.lock:
            discussion = self._discussion(mr, discussion_id)
            if not any(n["resolvable"] for n in discussion["notes"]):
                raise ApiError(400, "400 Bad request - discussion is not resolvable")
            if str(value).lower() not in ("true", "false"):
                raise ApiError(400, "resolved is missing", key="error")
            resolved = str(value).lower() == "true"
            _set_resolved(discussion, self._user_json(username), resolved, self._now())
            return copy.deepcopy(discussion)

    def create_note(self, mr: MergeRequest, username: str, data: Json) -> Json:
        with self.lock:
            return self._start(mr, self._note(mr, username, _body(data)))["notes"][0]

    def edit_note(self, mr: MergeRequest, note_id: str, username: str, data: Json) -> Json:
        with self.lock:
            note = next((n for n in self._all_notes(mr) if str(n["id"]) == note_id), None)
            if note is None:
                raise ApiError(404, "404 Note Not Found")
            if note["system"] or note["author"]["username"] != username:
                raise ApiError(403, "403 Forbidden")
            note.update(body=_body(data), updated_at=self._now())
            return copy.deepcopy(note)

    def all_notes(self, mr: MergeRequest) -> list[Json]:
        with self.lock:
            return copy.deepcopy(self._all_notes(mr))

    # -- inside ------------------------------------------------------------------------------

    def _position(self, mr: MergeRequest, given: Any) -> Json:
        """The position as GitLab stores it, or its 400 when it names no line of the diff."""
        if not isinstance(given, dict):
            raise ApiError(400, "position is invalid", key="error")
        for name in ("base_sha", "start_sha", "head_sha", "position_type"):
            if not given.get(name):
                raise ApiError(400, f"position[{name}] is missing", key="error")
        shas = (given["base_sha"], given["start_sha"], given["head_sha"])
        new_path = given.get("new_path") or given.get("old_path")
        old_path = given.get("old_path") or new_path
        line = str(given.get("new_line"))
        if (
            given["position_type"] != "text"
            or shas != (mr.base_sha, mr.start_sha, mr.head_sha)
            or new_path not in mr.commentable
            or old_path != mr.renamed.get(new_path, new_path)
            or not line.isdigit()
            or int(line) not in mr.commentable[new_path]
        ):
            raise ApiError(400, LINE_CODE_REFUSED)
        line_range = given.get("line_range")
        if line_range is not None:
            line_range = self._line_range(mr, new_path, int(line), line_range)
        return {
            "base_sha": mr.base_sha,
            "start_sha": mr.start_sha,
            "head_sha": mr.head_sha,
            "old_path": old_path,
            "new_path": new_path,
            "position_type": "text",
            "old_line": None,
            "new_line": int(line),
            "line_range": line_range,
            "ignore_whitespace_change": False,
        }

    def _line_range(self, mr: MergeRequest, path: str, line: int, given: Any) -> Json:
        diff = mr.diffs.get(path) or added_hunks(mr.commentable.get(path, set()))
        return checked_range(diff, path, line, given)

    def _reply(self, mr: MergeRequest, discussion: Json, username: str, body: str) -> Json:
        first = discussion["notes"][0]
        if discussion["individual_note"]:  # a reply turns a single note into a thread
            discussion["individual_note"] = False
            first.update(type="DiscussionNote", resolvable=True)
        note = self._note(mr, username, body)
        note.update(type=first["type"], resolvable=first["resolvable"], resolved=first["resolved"])
        if first.get("position"):
            note["position"] = copy.deepcopy(first["position"])
        discussion["notes"].append(note)
        return copy.deepcopy(note)

    def _start(self, mr: MergeRequest, note: Json, *, individual: bool = True) -> Json:
        digest = hashlib.sha1(f"{mr.id}/{note['id']}".encode()).hexdigest()
        discussion = {"id": digest, "individual_note": individual, "notes": [note]}
        mr.discussions.append(discussion)
        return copy.deepcopy(discussion)

    def _note(self, mr: MergeRequest, username: str, body: str) -> Json:
        now = self._now()
        return {
            "id": next(self._ids),
            "type": None,
            "body": body,
            "attachment": None,
            "author": self._user_json(username),
            "created_at": now,
            "updated_at": now,
            "system": False,
            "noteable_id": mr.id,
            "noteable_type": "MergeRequest",
            "noteable_iid": mr.iid,
            "project_id": mr.project_id,
            "commit_id": None,
            "resolvable": False,
            "resolved": False,
            "resolved_by": None,
            "resolved_at": None,
            "confidential": False,
            "internal": False,
        }

    def _discussion(self, mr: MergeRequest, discussion_id: str) -> Json:
        for discussion in mr.discussions:
            if discussion["id"] == discussion_id:
                return discussion
        raise ApiError(404, "404 Discussion Not Found")

    def _discussion_anywhere(self, discussion_id: str) -> tuple[MergeRequest, Json]:
        for mr in self._mrs.values():
            for discussion in mr.discussions:
                if discussion["id"] == discussion_id:
                    return mr, discussion
        raise KeyError(discussion_id)

    def _all_notes(self, mr: MergeRequest) -> list[Json]:
        return [note for discussion in mr.discussions for note in discussion["notes"]]

    def _user(self, username: str) -> str:
        self._users.setdefault(username, len(self._users) + 1)
        return username

    def _user_json(self, username: str) -> Json:
        return {
            "id": self._users[self._user(username)],
            "username": username,
            "name": username.title(),
            "state": "active",
            "locked": False,
            "avatar_url": None,
            "web_url": f"{self.base_url}/{username}",
        }

    def _now(self) -> str:
        return _stamp(next(self._clock))


def _set_resolved(discussion: Json, user: Json, resolved: bool, now: str) -> None:
    for note in discussion["notes"]:
        if note["resolvable"]:
            note.update(
                resolved=resolved,
                resolved_by=user if resolved else None,
                resolved_at=now if resolved else None,
            )


def _body(data: Json) -> str:
    body = data.get("body")
    if not isinstance(body, str) or not body:
        raise ApiError(400, "body is missing", key="error")
    return body


def _stamp(seconds: int) -> str:
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
