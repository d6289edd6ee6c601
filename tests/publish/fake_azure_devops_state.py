"""The state behind the fake Azure DevOps (`fake_azure_devops.py`): pull requests, their
iterations and changes, their threads and comments, as Azure DevOps' REST API 7.1 shapes them
(camelCase JSON the library's own models parse). Writes raise `ApiError` with Azure DevOps'
`WrappedException` body (`TF…` codes) where the real service refuses them."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

Json = dict[str, Any]
TIME = "2026-01-01T00:00:00Z"
THREAD_COMMENT_LIMIT = 500  # "up to 500 comments can be created per thread"


class ApiError(Exception):
    def __init__(self, status: int, message: str, type_key: str = "InvalidArgumentValueException"):
        super().__init__(message)
        self.status = status
        self.body = {
            "$id": "1",
            "innerException": None,
            "message": message,
            "typeName": f"Microsoft.TeamFoundation.Git.Server.{type_key}, Microsoft.TeamFoundation",
            "typeKey": type_key,
            "errorCode": 0,
            "eventId": 3000,
        }


@dataclass
class Iteration:
    id: int
    source: str
    target: str
    common: str
    changes: list[Json]


@dataclass
class PullRequest:
    project: str
    repo: str
    number: int
    source_branch: str
    target_branch: str
    iterations: list[Iteration] = field(default_factory=list)
    threads: list[Json] = field(default_factory=list)

    @property
    def head(self) -> Iteration:
        return self.iterations[-1]


def identity(name: str) -> Json:
    return {"displayName": name, "uniqueName": name, "id": f"id-{name}", "descriptor": name}


class AzureDevOpsState:
    """Pull requests by (project, repository, id); tokens and who they are."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._pulls: dict[tuple[str, str, int], PullRequest] = {}
        self._tokens: dict[str, tuple[str, bool]] = {}
        self._ids = itertools.count(1)
        self.url = ""  # the collection URL, set by the server

    def add_token(self, token: str, user: str, *, write: bool = True) -> None:
        self._tokens[token] = (user, write)

    def user_of(self, token: str) -> tuple[str, bool] | None:
        return self._tokens.get(token)

    def add_pull_request(
        self,
        project: str,
        repo: str,
        number: int,
        *,
        head: str,
        base: str,
        changed: dict[str, str],
        source_branch: str = "feature",
        target_branch: str = "main",
    ) -> PullRequest:
        """A pull request whose first iteration changes `changed` (path -> changeType)."""
        with self.lock:
            pr = PullRequest(project, repo, number, source_branch, target_branch)
            self._pulls[(project.lower(), repo.lower(), number)] = pr
            self._iterate(pr, head, base, changed)
            return pr

    def push(self, number: int, head: str, base: str, changed: dict[str, str]) -> None:
        """A push: a new iteration at `head`, changing `changed` against the target."""
        with self.lock:
            self._iterate(self.pull(number), head, base, changed)

    def _iterate(self, pr: PullRequest, head: str, base: str, changed: dict[str, str]) -> None:
        changes = [
            {
                "changeTrackingId": n,
                "changeId": n,
                "item": {"objectId": f"{n:040x}", "path": "/" + path.lstrip("/")},
                "changeType": kind,
            }
            for n, (path, kind) in enumerate(sorted(changed.items()), start=1)
        ]
        pr.iterations.append(Iteration(len(pr.iterations) + 1, head, base, base, changes))

    def pull(self, number: int) -> PullRequest:
        with self.lock:
            return next(pr for pr in self._pulls.values() if pr.number == number)

    def find(self, project: str, repo: str, number: str) -> PullRequest:
        projects = {key[0] for key in self._pulls}
        if project.lower() not in projects:
            raise ApiError(
                404,
                f"TF200016: The following project does not exist: {project}. Verify that the"
                " name of the project is correct and that the project exists on the specified"
                " Azure DevOps Server.",
                "ProjectDoesNotExistWithNameException",
            )
        if not any(key[:2] == (project.lower(), repo.lower()) for key in self._pulls):
            raise ApiError(
                404,
                f"TF401019: The Git repository with name or identifier {repo} does not exist or"
                " you do not have permissions for the operation you are attempting.",
                "GitRepositoryNotFoundException",
            )
        pr = self._pulls.get((project.lower(), repo.lower(), int(number or 0)))
        if pr is None:
            raise ApiError(
                404,
                "TF401180: The requested pull request was not found.",
                "GitPullRequestNotFoundException",
            )
        return pr

    # -- JSON as the API answers ------------------------------------------------------------

    def repository_json(self, pr: PullRequest) -> Json:
        web = f"{self.url}/{quote(pr.project)}/_git/{quote(pr.repo)}"
        return {
            "id": f"repo-{pr.repo}",
            "name": pr.repo,
            "url": f"{self.url}/{pr.project}/_apis/git/repositories/{pr.repo}",
            "webUrl": web,
            "project": {"id": f"project-{pr.project}", "name": pr.project, "state": "wellFormed"},
        }

    def pull_json(self, pr: PullRequest) -> Json:
        head = pr.head
        return {
            "repository": self.repository_json(pr),
            "pullRequestId": pr.number,
            "codeReviewId": pr.number,
            "status": "active",
            "createdBy": identity("carol"),
            "creationDate": TIME,
            "title": "A change",
            "sourceRefName": f"refs/heads/{pr.source_branch}",
            "targetRefName": f"refs/heads/{pr.target_branch}",
            "mergeStatus": "succeeded",
            "isDraft": False,
            "mergeId": "merge-id",
            "lastMergeSourceCommit": {"commitId": head.source},
            "lastMergeTargetCommit": {"commitId": head.target},
            "lastMergeCommit": {"commitId": "m" * 40},
            "reviewers": [],
            "url": f"{self.repository_json(pr)['url']}/pullRequests/{pr.number}",
            "supportsIterations": True,
            "artifactId": f"vstfs:///Git/PullRequestId/{pr.number}",
        }

    @staticmethod
    def iteration_json(it: Iteration) -> Json:
        return {
            "id": it.id,
            "description": "push",
            "author": identity("carol"),
            "createdDate": TIME,
            "updatedDate": TIME,
            "sourceRefCommit": {"commitId": it.source},
            "targetRefCommit": {"commitId": it.target},
            "commonRefCommit": {"commitId": it.common},
            "hasMoreCommits": False,
            "reason": "push",
        }

    # -- threads and comments ---------------------------------------------------------------

    def threads(self, number: int) -> list[Json]:
        with self.lock:
            return self.pull(number).threads

    def thread(self, pr: PullRequest, thread_id: str) -> Json:
        for thread in pr.threads:
            if str(thread["id"]) == str(thread_id):
                return thread
        raise ApiError(404, f"TF401181: The pull request thread {thread_id} was not found.")

    def _comment(self, user: str, data: Json, comment_id: int) -> Json:
        return {
            "id": comment_id,
            "parentCommentId": int(data.get("parentCommentId") or 0),
            "author": identity(user),
            "content": str(data.get("content") or ""),
            "publishedDate": TIME,
            "lastUpdatedDate": TIME,
            "lastContentUpdatedDate": TIME,
            "commentType": data.get("commentType") or "text",
            "usersLiked": [],
            "isDeleted": False,
        }

    def create_thread(self, pr: PullRequest, user: str, data: Json) -> Json:
        comments = data.get("comments") or []
        if not comments or not isinstance(comments, list):
            raise ApiError(400, "The thread must have at least one comment.")
        context = data.get("threadContext")
        if context is not None:
            _check_context(context)
        thread: Json = {
            "id": next(self._ids),
            "publishedDate": TIME,
            "lastUpdatedDate": TIME,
            "comments": [self._comment(user, c, n) for n, c in enumerate(comments, start=1)],
            "threadContext": context,
            "pullRequestThreadContext": data.get("pullRequestThreadContext"),
            "properties": {},
            "isDeleted": False,
        }
        if data.get("status") is not None:
            thread["status"] = data["status"]
        pr.threads.append(thread)
        return thread

    def update_thread(self, pr: PullRequest, thread_id: str, data: Json) -> Json:
        thread = self.thread(pr, thread_id)
        if "status" in data:
            thread["status"] = data["status"]
        return thread

    def create_comment(self, pr: PullRequest, thread_id: str, user: str, data: Json) -> Json:
        thread = self.thread(pr, thread_id)
        if len(thread["comments"]) >= THREAD_COMMENT_LIMIT:
            raise ApiError(400, "TF401182: A thread can have at most 500 comments.")
        comment = self._comment(user, data, len(thread["comments"]) + 1)
        thread["comments"].append(comment)
        return comment

    def update_comment(self, pr: PullRequest, ids: tuple[str, str], user: str, data: Json) -> Json:
        thread = self.thread(pr, ids[0])
        comment = next((c for c in thread["comments"] if str(c["id"]) == ids[1]), None)
        if comment is None:
            raise ApiError(404, f"TF401183: The comment {ids[1]} was not found.")
        if comment["author"]["uniqueName"] != user:
            raise ApiError(403, "TF401184: Only the author of a comment can edit it.")
        comment["content"] = str(data.get("content") or "")
        return comment

    # -- what people do in the web UI -------------------------------------------------------

    def person_sets_status(self, thread_id: str, status: str) -> None:
        with self.lock:
            for pr in self._pulls.values():
                for thread in pr.threads:
                    if str(thread["id"]) == str(thread_id):
                        thread["status"] = status

    def person_replies(self, thread_id: str, text: str, who: str) -> Json:
        with self.lock:
            for pr in self._pulls.values():
                for thread in pr.threads:
                    if str(thread["id"]) == str(thread_id):
                        data = {"content": text, "parentCommentId": 1}
                        return self.create_comment(pr, thread_id, who, data)
        raise KeyError(thread_id)

    def system_thread(self, number: int, text: str) -> None:
        """What Azure DevOps posts itself (a vote, a policy, a push)."""
        with self.lock:
            pr = self.pull(number)
            thread = self.create_thread(pr, "Azure DevOps", {"comments": [{"content": text}]})
            thread["comments"][0]["commentType"] = "system"


def _check_context(context: Json) -> None:
    """The checks Azure DevOps makes on a file position: an absolute path, lines and offsets
    from 1, the end not before the start. It does not check that the file or line is in the
    pull request: a thread can sit on any line of any path."""
    path = context.get("filePath")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ApiError(400, "Invalid argument value.\r\nParameter name: threadContext.filePath")
    start, end = context.get("rightFileStart"), context.get("rightFileEnd")
    for position in (start, end):
        if position is not None and (position.get("line", 0) < 1 or position.get("offset", 0) < 1):
            raise ApiError(400, "Invalid argument value.\r\nParameter name: threadContext")
    if start and end and (end["line"], end["offset"]) < (start["line"], start["offset"]):
        raise ApiError(400, "Invalid argument value.\r\nParameter name: threadContext")
