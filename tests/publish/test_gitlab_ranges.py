"""GitLab multi-line comments: the `line_range` GitLabClient posts (each end's `line_code` from
the merge request's diff), read back through python-gitlab, and the ranges the fake refuses as
GitLab does."""

from __future__ import annotations

import hashlib

import gitlab
import pytest

from reviewflow.publish.gitlab.client import GitLabClient
from reviewflow.pullrequest.context import ours
from reviewflow.pullrequest.markers import finding_marker
from reviewflow.pullrequest.models import NewComment
from tests.publish.fake_gitlab import BOT_TOKEN, FakeGitLab
from tests.publish.test_gitlab_client import APP, BASE, HEAD, IID, PROJECT, PROJECT_ID, gl

__all__ = ["gl"]  # the fixture

DIFF = (
    "@@ -8,5 +8,7 @@ def handler(request):\n"
    " context 8\n"
    "-removed old 9\n"
    "+added 9\n"
    "+added 10\n"
    "+added 11\n"
    " context 12\n"
    " context 13\n"
    " context 14\n"
    "@@ -40,3 +42,3 @@\n"
    " context 42\n"
    " context 43\n"
    " context 44\n"
)


def _ranged(fake: FakeGitLab) -> GitLabClient:
    fake.add_merge_request(
        PROJECT, IID + 1, project_id=PROJECT_ID, head_sha=HEAD, base_sha=BASE, diffs={APP: DIFF}
    )
    return GitLabClient(fake.ref(PROJECT, IID + 1), BOT_TOKEN, timeout=5.0)


def _span(fp: str, start: int, end: int) -> NewComment:
    body = f"{finding_marker(fp * 64)}\nfinding"
    return NewComment(
        fingerprint=fp * 64, path=APP, old_path=APP, start_line=start, end_line=end, body=body
    )


def test_a_multi_line_comment_carries_its_line_range_read_back_through_python_gitlab(
    gl: FakeGitLab,
) -> None:
    client = _ranged(gl)
    comments = [_span("a", 8, 12), _span("b", 10, 11), _span("c", 13, 43), _span("d", 5, 12)]
    assert client.post(client.read().info, comments) == []
    api = gitlab.Gitlab(gl.url, private_token=BOT_TOKEN)
    mr = api.projects.get(PROJECT, lazy=True).mergerequests.get(IID + 1)
    positions = [d.attributes["notes"][0]["position"] for d in mr.discussions.list(get_all=True)]
    app = hashlib.sha1(APP.encode()).hexdigest()
    assert [p["new_line"] for p in positions] == [12, 11, 43, 12]
    assert positions[0]["line_range"] == {
        "start": {"line_code": f"{app}_8_8", "type": "old", "old_line": 8, "new_line": 8},
        "end": {"line_code": f"{app}_10_12", "type": "old", "old_line": 10, "new_line": 12},
    }
    assert positions[1]["line_range"]["start"] == {
        "line_code": f"{app}_10_10",
        "type": "new",
        "old_line": None,
        "new_line": 10,
    }
    assert positions[2]["line_range"]["end"]["line_code"] == f"{app}_41_43"
    assert positions[3]["line_range"] is None  # line 5 is not in the diff: its last line only

    again = client.read()
    assert client.post(again.info, []) == [] and len(again.threads) == 4
    assert {ours(t) for t in again.threads} == {c.fingerprint for c in comments}


def test_the_fake_refuses_a_line_range_gitlab_refuses(gl: FakeGitLab) -> None:
    _ranged(gl)
    api = gitlab.Gitlab(gl.url, private_token=BOT_TOKEN)
    mr = api.projects.get(PROJECT, lazy=True).mergerequests.get(IID + 1, lazy=True)
    app = hashlib.sha1(APP.encode()).hexdigest()
    base = {"position_type": "text", "base_sha": BASE, "start_sha": BASE, "head_sha": HEAD}
    base |= {"new_path": APP, "old_path": APP, "new_line": 12}
    end = {"line_code": f"{app}_10_12", "type": "old"}
    bad_starts = [
        {"line_code": f"{app}_9_9", "type": "new"},  # old position wrong for added line 9
        {"line_code": f"{app}_8_8", "type": "new"},  # a context line is `old`
        {"line_code": f"{'0' * 40}_8_8", "type": "old"},  # not this file's sha1
        {"line_code": f"{app}_20_22", "type": "old"},  # not in the diff
    ]
    for start in bad_starts:
        position = {**base, "line_range": {"start": start, "end": end}}
        with pytest.raises(gitlab.exceptions.GitlabCreateError, match="line_code"):
            mr.discussions.create({"body": "x", "position": position})
    wrong_end = {"start": {"line_code": f"{app}_8_8", "type": "old"}, "end": end}
    with pytest.raises(gitlab.exceptions.GitlabCreateError, match="line_code"):
        mr.discussions.create({"body": "x", "position": {**base, "new_line": 13,
                                                         "line_range": wrong_end}})  # fmt: skip
    ok = mr.discussions.create({"body": "x", "position": {**base, "line_range": wrong_end}})
    assert ok.attributes["notes"][0]["position"]["line_range"]["end"]["new_line"] == 12
