"""What reaches a Gitea or Forgejo comment: no issue or request reference from model text (Gitea
cross-links `#12`, `!12` and `owner/repo#12`), the marker first, and prose where GitHub and
GitLab would have a suggestion block (Gitea has none): the fix as a code block."""

from __future__ import annotations

import re

from reviewflow.publish.comments import comment_body
from reviewflow.publish.safe import safe_inline, safe_text
from reviewflow.pullrequest.markers import finding_fingerprint
from tests.publish.memory import finding

REFERENCES = "closes #12, see !7 and acme/app#3; `#4` and issue 5 # 6 stay, @ann"


def test_references_and_mentions_are_inert_and_the_rest_reads_the_same() -> None:
    for text in (safe_text(REFERENCES), safe_inline(REFERENCES)):
        assert re.search(r"[#!]\d", text) is None  # nothing Gitea's reference finder matches
        assert "@ann" not in text
        assert text.replace("\u200b", "").replace("\\", "") == REFERENCES


def test_a_gitea_comment_has_its_marker_first_and_no_suggestion_block() -> None:
    fix = "```python\n    x = json.loads(data)\n```"
    hostile = finding("a.py", 3, "    x = eval(data)", title="fix #12 now")
    hostile = hostile.model_copy(update={"suggestion": fix})
    body = comment_body(hostile, "gitea")
    assert "```suggestion" in comment_body(hostile, "github")  # GitHub's would be one
    assert finding_fingerprint(body) == hostile.fingerprint
    assert "```suggestion" not in body and "#12" not in body
    assert "**Suggestion:**\n\n```text\n    x = json.loads(data)\n```" in body  # code, indented
