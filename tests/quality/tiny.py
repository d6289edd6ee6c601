"""The harness's two tiny cases: real Git repositories built in a temporary folder, fetched
through `file://` like any case, with a scripted model that reviews and judges them.

- `tiny-window` (SWR-Bench style: the golden comment has a file and a line): the change drops
  a zero guard. The model reports that (a hit, found by the line window, no judge asked) and a
  false positive on another file.
- `tiny-judged` (Martian style: no file or line): the change keeps the result of `list.sort()`.
  The model reports that (the judge says it matches golden comment 1); golden comment 2 (a
  missing test) is missed.

Expected: window case P 1/2, R 1/1; judged case P 1/1, R 1/2; total P 2/3, R 2/3, F1 2/3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import RecordedRequest, Reply, Text

JUDGE_MARK = "You judge automated code review tools"
EXTRACT_MARK = "You split a code review written as free text"
PEER_ISSUE = "list.sort() returns None; it sorts in place and returns None"

# A stand-in for pr-agent's command (pr-agent needs Python 3.12; this project runs 3.11): it
# checks the settings its local git provider reads from the environment, diffs the target
# branch against HEAD as that provider does, and writes its review where it is told to.
FAKE_PR_AGENT = """#!{python}
import os, subprocess, sys
assert os.environ["CONFIG.GIT_PROVIDER"] == "local" and os.environ["CONFIG.MODEL"]
target = sys.argv[sys.argv.index("--pr_url") + 1]
assert sys.argv[-1] == "review"
base = subprocess.run(["git", "merge-base", target, "HEAD"], capture_output=True, text=True)
diff = subprocess.run(["git", "diff", base.stdout.strip(), "HEAD"], capture_output=True, text=True)
lines = ["## PR Reviewer Guide"]
if "items.sort()" in diff.stdout:
    lines += ["- items.py: list.sort() returns None", "- consider a docstring"]
with open(os.environ["LOCAL.REVIEW_PATH"], "w") as out:
    out.write("\\n".join(lines) + "\\n")
"""


def install_fake_pr_agent(folder: Path) -> Path:
    """A `pr-agent` command in `folder` (put it first on PATH)."""
    import sys

    folder.mkdir(parents=True, exist_ok=True)
    command = folder / "pr-agent"
    command.write_text(FAKE_PR_AGENT.format(python=sys.executable))
    command.chmod(0o755)
    return folder


CALC_BASE = "def ratio(a, b):\n    return a / b if b else 0.0\n"
CALC_HEAD = "def ratio(a, b):\n    return a / b\n"
NAMES_BASE = "def greet(name):\n    return 'hi ' + name\n"
NAMES_HEAD = "def greet(name):\n    return f'hi {name}'\n"
ITEMS_BASE = "def ordered(items):\n    return sorted(items)\n"
ITEMS_HEAD = "def ordered(items):\n    result = items.sort()\n    return result\n"

ZERO = {
    "severity": "high",
    "category": "bug",
    "file": "calc.py",
    "existing_code": "    return a / b",
    "title": "Division by zero when b is 0",
    "problem": "The guard for b == 0 was removed; ratio(1, 0) raises ZeroDivisionError.",
    "evidence": "return a / b without the previous `if b else 0.0`",
    "suggestion": "keep the guard",
    "confidence": 0.9,
}
NOISE = {
    "severity": "medium",
    "category": "bug",
    "file": "names.py",
    "existing_code": "    return f'hi {name}'",
    "title": "f-string may fail on None",
    "problem": "greet(None) now formats 'hi None' instead of raising.",
    "evidence": "f-string formatting",
    "suggestion": "check the name",
    "confidence": 0.8,
}
SORT = {
    "severity": "high",
    "category": "bug",
    "file": "items.py",
    "existing_code": "    result = items.sort()",
    "title": "list.sort() returns None",
    "problem": "ordered() now returns None: list.sort() sorts in place and returns None.",
    "evidence": "result = items.sort()",
    "suggestion": "return sorted(items)",
    "confidence": 0.95,
}
GOLDEN_SORT = "ordered() returns None because list.sort() sorts in place and returns None."
GOLDEN_TEST = "No test covers ordered() with an empty list."


def build(root: Path) -> dict[str, Any]:
    """Both repositories under `root` and their case list (file:// URLs, pinned commits)."""
    window = GitRepo.init(root / "window")
    window.write("calc.py", CALC_BASE)
    window.write("names.py", NAMES_BASE)
    base_w = window.commit("base")
    window.write("calc.py", CALC_HEAD)
    window.write("names.py", NAMES_HEAD)
    head_w = window.commit("change")
    judged = GitRepo.init(root / "judged")
    judged.write("items.py", ITEMS_BASE)
    base_j = judged.commit("base")
    judged.write("items.py", ITEMS_HEAD)
    head_j = judged.commit("change")
    golden_w = [{"comment": "ratio() divides by zero when b is 0", "file": "calc.py", "line": 2}]
    golden_j = [{"comment": GOLDEN_SORT, "severity": "High"}, {"comment": GOLDEN_TEST}]
    cases = [
        {
            "id": "tiny-window",
            "repo": (root / "window").as_uri(),
            "base": base_w,
            "head": head_w,
            "golden": golden_w,
        },
        {
            "id": "tiny-judged",
            "repo": (root / "judged").as_uri(),
            "base": base_j,
            "head": head_j,
            "golden": golden_j,
        },
    ]
    data = {"name": "tiny", "source": {"benchmark": "tests/quality/tiny.py"}, "cases": cases}
    (root / "cases.json").write_text(json.dumps(data), encoding="utf-8")
    return data


class TinyModel:
    """Reviews like `ScriptedReviewer` and judges: a match only for the sort finding against
    the sort golden comment. Counts the judge requests it saw."""

    def __init__(self) -> None:
        self.reviewer = ScriptedReviewer(
            {"calc.py": [ZERO], "names.py": [NOISE], "items.py": [SORT]}
        )
        self.judged = 0
        self.extracted = 0

    def __call__(self, record: RecordedRequest) -> Reply:
        text = json.dumps(record.body, ensure_ascii=False)
        if EXTRACT_MARK in text:
            self.extracted += 1
            found = [PEER_ISSUE, "consider a docstring"] if "list.sort()" in text else []
            return Text(json.dumps(found))
        if JUDGE_MARK not in text:
            return self.reviewer(record)
        self.judged += 1
        match = "list.sort() returns None" in text and "sorts in place and returns None" in text
        match = match and "No test covers" not in text
        answer = {
            "reasoning": "same defect" if match else "different issue",
            "match": match,
            "confidence": 0.9 if match else 0.1,
        }
        return Text("```json\n" + json.dumps(answer) + "\n```")
