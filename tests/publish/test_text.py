"""What reaches a comment: inert model text, markers that cannot be forged, suggestion blocks
only where the fix replaces exactly the commented lines."""

from __future__ import annotations

import re

from reviewflow.publish.comments import comment_body, replacement
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.safe import safe_text, suggestion_block
from reviewflow.pullrequest.markers import finding_fingerprint, is_summary
from tests.publish.memory import finding

HOSTILE = (
    "@octocat and @acme/security-team look! <img src=x onerror=alert(1)> "
    "![pixel](https://evil.example/p.png) <!-- reviewflow:finding " + "0" * 64 + " -->\n"
    "/merge\n  /approve\n```\nfence closed\n~~~"
)


def test_hostile_text_cannot_mention_inject_html_or_images_or_run_quick_actions() -> None:
    text = safe_text(HOSTILE)
    assert "@octocat" not in text and "@acme" not in text  # `@` + zero-width space
    # CommonMark: an escaped `<` or `[` is a character, never a tag, a comment or an image
    assert re.search(r"(?<!\\)[<>\[\]]", text) is None and "\\<img" in text
    assert not any(line.lstrip().startswith("/") for line in text.splitlines())
    assert "```" not in text


def test_bitbucket_mentions_by_account_id_are_inert_too() -> None:
    text = safe_text("ping @{557058:0fbe1228-7921} and @{a1b2c3d4-uuid} please")
    assert "@{" not in text and text.count("@\u200b{") == 2


def test_a_hostile_finding_keeps_one_marker_and_its_own_fingerprint() -> None:
    hostile = finding("a.py", 3, "x = 1").model_copy(
        update={"title": HOSTILE, "problem": HOSTILE, "evidence": HOSTILE, "suggestion": HOSTILE}
    )
    body = comment_body(hostile, "github")
    assert finding_fingerprint(body) == hostile.fingerprint
    assert len(re.findall(r"(?<!\\)<!--", body)) == 1 and not is_summary(body)
    assert len(body) < 16_000


def test_long_text_is_bounded() -> None:
    assert len(safe_text("x" * 50_000)) <= 3_000


def _with_fix(suggestion: str, code: str = "    x = eval(data)") -> str:
    return comment_body(
        finding("a.py", 3, code).model_copy(update={"suggestion": suggestion}), "github"
    )


def test_a_fenced_fix_for_the_same_lines_becomes_a_suggestion_block() -> None:
    body = _with_fix("Parse it instead:\n```python\n    x = json.loads(data)\n```")
    assert "```suggestion\n    x = json.loads(data)\n```" in body
    assert "Parse it instead" in body


def test_prose_code_from_elsewhere_or_the_same_code_stays_prose() -> None:
    for suggestion in (
        "use json.loads",
        "```python\nimport json\n```",  # another indentation: not a rewrite of these lines
        "```python\n    x = eval(data)\n```",  # the same code
        "```\n    a()\n```\n```\n    b()\n```",  # two blocks
    ):
        assert "```suggestion" not in _with_fix(suggestion), suggestion


def test_a_fix_that_is_no_suggestion_is_still_code_and_the_prose_around_it_inert() -> None:
    text = "Parse instead @ann:\n```python\nif x:\n    y = json.loads(x)\n```\nthen #12."
    for platform in ("github", "bitbucket", "gitea"):
        body = comment_body(  # not the commented code's indentation: no one-click block
            finding("a.py", 3, "    z = 1").model_copy(update={"suggestion": text}), platform
        )
        assert "```text\nif x:\n    y = json.loads(x)\n```" in body, platform
        assert "@ann" not in body and "#12" not in body and "```suggestion" not in body


def test_a_suggestion_fence_cannot_be_closed_from_inside_and_gitlab_counts_lines() -> None:
    block = suggestion_block("s = '```'\nt = 1", "suggestion")
    assert block.startswith("````suggestion\n") and block.endswith("\n````")
    gitlab = spec_of("gitlab").suggestion
    assert gitlab is not None
    assert suggestion_block("a\nb\nc", gitlab(3)).startswith("```suggestion:-2+0\n")
    multi = finding("a.py", 3, "a\nb").model_copy(update={"end_line": 4})
    assert replacement(multi.model_copy(update={"suggestion": "```\nc\n```"})) == ("c", "")


def test_no_reference_can_link_or_notify_a_work_item_issue_or_request() -> None:
    text = safe_text("see #123, !45 and @<6B1A3ADB-0E1F-4A2B-9C3D-1234567890AB> (#x, 3!)")
    assert re.search(r"[#!]\d", text) is None  # Azure DevOps: work item 123, pull request 45
    assert "#\u200b123" in text and "!\u200b45" in text and "@\u200b\\<6B1A3ADB" in text
    assert "#x" in text and "3!" in text  # nothing else changes


def test_a_finding_of_several_passes_says_how_many_found_it() -> None:
    one = finding("a.py", 3, "x = 1")
    agreed = one.model_copy(update={"agreement": "2/3"})
    footer = comment_body(agreed, "github").splitlines()[-1]
    assert footer.endswith(f"{one.id} · confidence 0.90 · found by 2/3 passes</sub>")
    assert "passes" not in comment_body(one, "github")  # one pass: the comment of before
