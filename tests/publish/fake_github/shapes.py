"""GitHub's REST answer shapes, every field githubkit's models require filled plausibly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.publish.fake_github.state import IssueComment, Pull, Review, ReviewComment, User

EPOCH = "2026-01-05T09:00:00Z"

_USER_URLS = (
    "followers",
    "following{/other_user}",
    "gists{/gist_id}",
    "starred{/owner}{/repo}",
    "subscriptions",
    "organizations",
    "repos",
    "events{/privacy}",
    "received_events",
)
_REPO_URLS = (
    "archive/{archive_format}{/ref}",
    "assignees{/user}",
    "git/blobs{/sha}",
    "branches{/branch}",
    "collaborators{/collaborator}",
    "comments{/number}",
    "commits{/sha}",
    "compare/{base}...{head}",
    "contents/{+path}",
    "contributors",
    "deployments",
    "downloads",
    "events",
    "forks",
    "git/commits{/sha}",
    "git/refs{/sha}",
    "git/tags{/sha}",
    "issues/comments{/number}",
    "issues/events{/number}",
    "issues{/number}",
    "keys{/key_id}",
    "labels{/name}",
    "languages",
    "merges",
    "milestones{/number}",
    "notifications{?since,all,participating}",
    "pulls{/number}",
    "releases{/id}",
    "stargazers",
    "statuses/{sha}",
    "subscribers",
    "subscription",
    "tags",
    "teams",
    "git/trees{/sha}",
    "hooks",
)


@dataclass(frozen=True)
class Urls:
    """Where the fake answers: `api` the REST base, `web` the site's root."""

    api: str
    web: str


def _url_key(template: str) -> str:
    name = template.split("{", 1)[0].rstrip("/")
    special = {
        "archive": "archive_url",
        "git/blobs": "blobs_url",
        "git/commits": "git_commits_url",
        "git/refs": "git_refs_url",
        "git/tags": "git_tags_url",
        "git/trees": "trees_url",
        "issues/comments": "issue_comment_url",
        "issues/events": "issue_events_url",
        "compare": "compare_url",
        "contents": "contents_url",
        "statuses": "statuses_url",
    }
    return special.get(name, name.replace("/", "_") + "_url")


def user(u: User, urls: Urls) -> dict[str, Any]:
    base = f"{urls.api}/users/{u.login}"
    shape: dict[str, Any] = {
        "login": u.login,
        "id": u.id,
        "node_id": f"{'BOT' if u.bot else 'U'}_fake{u.id}",
        "avatar_url": f"{urls.web}/avatars/u/{u.id}?v=4",
        "gravatar_id": "",
        "url": base,
        "html_url": f"{urls.web}/{'apps/' + u.graphql_login if u.bot else u.login}",
        "type": "Bot" if u.bot else "User",
        "user_view_type": "public",
        "site_admin": False,
    }
    for template in _USER_URLS:
        shape[template.split("{", 1)[0] + "_url"] = f"{base}/{template}"
    return shape


def repository(full_name: str, owner: User, urls: Urls) -> dict[str, Any]:
    base = f"{urls.api}/repos/{full_name}"
    shape: dict[str, Any] = {
        "id": 4242,
        "node_id": "R_fake4242",
        "name": full_name.split("/", 1)[1],
        "full_name": full_name,
        "private": False,
        "owner": user(owner, urls),
        "html_url": f"{urls.web}/{full_name}",
        "description": "A repository the fake GitHub serves",
        "fork": False,
        "url": base,
        "git_url": f"git://fake/{full_name}.git",
        "ssh_url": f"git@fake:{full_name}.git",
        "clone_url": f"{urls.web}/{full_name}.git",
        "svn_url": f"{urls.web}/{full_name}",
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "license": None,
        "forks": 0,
        "forks_count": 0,
        "stargazers_count": 3,
        "watchers_count": 3,
        "watchers": 3,
        "size": 120,
        "default_branch": "main",
        "open_issues_count": 1,
        "open_issues": 1,
        "has_issues": True,
        "has_pages": False,
        "archived": False,
        "disabled": False,
        "visibility": "public",
        "pushed_at": EPOCH,
        "created_at": EPOCH,
        "updated_at": EPOCH,
    }
    for template in _REPO_URLS:
        shape[_url_key(template)] = f"{base}/{template}"
    return shape


def _branch(pull: Pull, ref: str, sha: str, urls: Urls) -> dict[str, Any]:
    owner = pull.repo.split("/", 1)[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(pull.author, urls),
        "repo": repository(pull.repo, pull.author, urls),
    }


_STILL_OPEN: dict[str, Any] = {
    "state": "open",
    "locked": False,
    "body": "What this change does.",
    "labels": [],
    "milestone": None,
    "active_lock_reason": None,
    "closed_at": None,
    "merged_at": None,
    "merge_commit_sha": None,
    "assignee": None,
    "assignees": [],
    "requested_reviewers": [],
    "requested_teams": [],
    "author_association": "CONTRIBUTOR",
    "auto_merge": None,
    "draft": False,
    "merged": False,
    "mergeable": True,
    "rebaseable": True,
    "mergeable_state": "clean",
    "merged_by": None,
    "maintainer_can_modify": False,
    "deletions": 0,
}


def _pull_links(pull: Pull, urls: Urls) -> dict[str, str]:
    api = f"{urls.api}/repos/{pull.repo}"
    return {
        "self": f"{api}/pulls/{pull.number}",
        "html": f"{urls.web}/{pull.repo}/pull/{pull.number}",
        "issue": f"{api}/issues/{pull.number}",
        "comments": f"{api}/issues/{pull.number}/comments",
        "review_comments": f"{api}/pulls/{pull.number}/comments",
        "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{pull.number}/commits",
        "statuses": f"{api}/statuses/{pull.head_sha}",
    }


def pull_request(pull: Pull, review_comments: int, comments: int, urls: Urls) -> dict[str, Any]:
    """An open pull request, not a draft, mergeable."""
    links = _pull_links(pull, urls)
    diff = pull.commentable[pull.head_sha]
    shape: dict[str, Any] = {
        **_STILL_OPEN,
        "id": pull.id,
        "node_id": f"PR_fake{pull.id}",
        "number": pull.number,
        "title": f"Change number {pull.number}",
        "user": user(pull.author, urls),
        "created_at": pull.created_at,
        "updated_at": pull.created_at,
        "head": _branch(pull, pull.head_ref, pull.head_sha, urls),
        "base": _branch(pull, pull.base_ref, pull.base_sha, urls),
        "_links": {name: {"href": href} for name, href in links.items()},
        "comments": comments,
        "review_comments": review_comments,
        "commits": len(pull.commentable),
        "additions": sum(len(lines) for lines in diff.values()),
        "changed_files": len(diff),
        "url": links["self"],
        "html_url": links["html"],
        "diff_url": f"{links['html']}.diff",
        "patch_url": f"{links['html']}.patch",
        "issue_url": links["issue"],
    }
    for name in ("commits", "review_comments", "review_comment", "comments", "statuses"):
        shape[f"{name}_url"] = links[name]
    return shape


def issue_comment(comment: IssueComment, urls: Urls) -> dict[str, Any]:
    api = f"{urls.api}/repos/{comment.repo}"
    return {
        "id": comment.id,
        "node_id": comment.node_id,
        "url": f"{api}/issues/comments/{comment.id}",
        "html_url": f"{urls.web}/{comment.repo}/pull/{comment.number}#issuecomment-{comment.id}",
        "body": comment.body,
        "user": user(comment.author, urls),
        "created_at": comment.created_at,
        "updated_at": comment.updated_at,
        "issue_url": f"{api}/issues/{comment.number}",
        "author_association": "NONE",
        "performed_via_github_app": None,
    }


def review(rev: Review, urls: Urls) -> dict[str, Any]:
    pull_url = f"{urls.api}/repos/{rev.repo}/pulls/{rev.number}"
    html = f"{urls.web}/{rev.repo}/pull/{rev.number}#pullrequestreview-{rev.id}"
    return {
        "id": rev.id,
        "node_id": rev.node_id,
        "user": user(rev.author, urls),
        "body": rev.body,
        "state": rev.state,
        "html_url": html,
        "pull_request_url": pull_url,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
        "submitted_at": rev.submitted_at,
        "commit_id": rev.commit_id,
        "author_association": "NONE",
    }


def review_comment(
    comment: ReviewComment, path: str, line: int, repo: str, number: int, urls: Urls
) -> dict[str, Any]:
    api = f"{urls.api}/repos/{repo}/pulls"
    html = f"{urls.web}/{repo}/pull/{number}#discussion_r{comment.id}"
    shape = {
        "url": f"{api}/comments/{comment.id}",
        "pull_request_review_id": comment.review_id,
        "id": comment.id,
        "node_id": comment.node_id,
        "diff_hunk": f"@@ -{line},1 +{line},1 @@\n+changed line {line}",
        "path": path,
        "commit_id": comment.commit_id,
        "original_commit_id": comment.commit_id,
        "user": user(comment.author, urls),
        "body": comment.body,
        "created_at": comment.created_at,
        "updated_at": comment.created_at,
        "html_url": html,
        "pull_request_url": f"{api}/{number}",
        "author_association": "NONE",
        "_links": {
            "self": {"href": f"{api}/comments/{comment.id}"},
            "html": {"href": html},
            "pull_request": {"href": f"{api}/{number}"},
        },
        "line": line,
        "original_line": line,
        "side": "RIGHT",
        "subject_type": "line",
    }
    if comment.in_reply_to is not None:
        shape["in_reply_to_id"] = comment.in_reply_to
    return shape
