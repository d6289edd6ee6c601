"""The scripted verifier of `bench/verify.py`: a model that verifies a finding from what it reads.

It asks its questions from the claim it is shown (the finding's JSON), answers each by calling
one real read-only tool (`file_read`, `code_search`) and reading its output, and scores from the
answers alone. Every question asks for a fact that would disprove the finding, so a yes
disproves it. Claims come in kinds (`KINDS`): what the finding says, the construct on its lines,
and the fact elsewhere (before, after, or anywhere in the repository) that would disprove it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from reviewflow.providers import ModelRequest, ModelResponse
from reviewflow.providers.messages import ToolCall, ToolResultMessage, UserMessage


@dataclass(frozen=True)
class Kind:
    """A kind of claim: what the finding says, the construct it points at on its lines (a
    regex the answerer applies), and the fact elsewhere that would disprove it."""

    claim: str
    construct: str  # the question's words for the construct
    pattern: str
    context: str | None = None  # the question's words for the disproving fact
    context_pattern: str | None = None
    where: str | None = None  # "before", "after" (in the function) or "search" (the repo)


KINDS = {
    "divide": Kind(
        "Division by zero on an empty list",
        "a division by len()",
        r"/\s*len\(",
        "a check that the list is not empty",
        r"if not \w+:|len\(\w+\) == 0",
        "before",
    ),
    "open": Kind(
        "File handle never closed",
        "an open() outside a with-block",
        r"(?<!with )\bopen\(",
        "a close() of the handle",
        r"\.close\(\)",
        "after",
    ),
    "race": Kind(
        "Unsynchronized read-modify-write",
        "a read then a write of the same attribute",
        r"= self\.(\w+)\s*\n\s*self\.\1 = ",
        "a lock held around them",
        r"with self\.\w*lock\w*:",
        "before",
    ),
    "undefined": Kind(
        "Helper is never defined",
        "a call of a helper function",
        r"\bnormalize_\w+\(",
        "a definition",
        None,
        "search",
    ),
    "sql": Kind("SQL injection", "SQL text formatted with %", r"SELECT[^\n]*['\"]\s*%"),
    "index": Kind("Index out of range", "an index equal to the length", r"\[len\((\w+)\)\]"),
    "except": Kind("Errors swallowed", "an exception ignored by pass", r"except \w+:\s*\n\s*pass"),
    "md5": Kind("Weak password hash", "an MD5 hash", r"hashlib\.md5\("),
    "mutable": Kind("Mutable default argument", "a mutable default argument", r"=\s*\{\s*\}\s*\)"),
    "yaml": Kind("Unsafe YAML load", "yaml.load without a safe loader", r"yaml\.load\([^)]*\)"),
    "slice": Kind("Page slice one too long", "a slice end past start + size", r"\+\s*1\s*\]"),
}


def questions(finding: dict[str, Any]) -> list[str]:
    """What a careful questioner asks about the claim it is shown (the finding's JSON): the
    disproving fact, the construct on the lines, whether the lines are what it quotes."""
    kind = next(k for k in KINDS.values() if k.claim == finding["title"])
    where = f"lines {finding['start_line']}-{finding['end_line']} of {finding['path']}"
    asked = []
    if kind.where == "search":
        name = re.search(r"\b(normalize_\w+)\(", finding["existing_code"])
        asked.append(f"Is `{name.group(1) if name else '?'}` defined anywhere in the repository?")
    elif kind.where is not None:
        asked.append(f"Is there {kind.context} {kind.where} {where}?")
    asked.append(f"Do {where} lack {kind.construct}?")
    code = [line.strip() for line in finding["existing_code"].splitlines() if line.strip()]
    asked.append(f"Are {where} different from `{code[0]}`?" if code else f"Are {where} blank?")
    return asked


_LINES = r"lines (\d+)-(\d+) of (\S+)"
_ASKED = {
    "context": re.compile(rf"^Is there (.+) (before|after) {_LINES}\?$"),
    "search": re.compile(r"^Is `(\w+)` defined anywhere in the repository\?$"),
    "construct": re.compile(rf"^Do {_LINES} lack (.+)\?$"),
    "code": re.compile(rf"^Are {_LINES} different from `(.+)`\?$"),
    "blank": re.compile(rf"^Are {_LINES} blank\?$"),
}


def fenced(text: str) -> str:
    """The inside of the first untrusted-data fence of a message."""
    start = text.index("~~~~\n") + 5
    return text[start : text.index("\n~~~~", start)]


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=name, name=name, arguments=arguments, arguments_json=json.dumps(arguments))


def tool_calls(question: str) -> tuple[ToolCall, ...]:
    """The one call that answers `question`."""
    if m := _ASKED["search"].match(question):
        return (_call("code_search", search_text=f"def {m.group(1)}"),)
    if m := _ASKED["context"].match(question):
        start, end, path = int(m.group(3)), int(m.group(4)), m.group(5)
        lines = (max(1, start - 12), end) if m.group(2) == "before" else (start, end + 12)
        return (_call("file_read", file_path=path, start_line=lines[0], end_line=lines[1]),)
    m = next(filter(None, (_ASKED[q].match(question) for q in ("construct", "code", "blank"))))
    start, end, path = int(m.group(1)), int(m.group(2)), m.group(3)
    return (_call("file_read", file_path=path, start_line=start, end_line=end),)


def numbered(output: str) -> dict[int, str]:
    """A file_read output's lines by number."""
    return {int(n): text for n, _, text in (ln.partition("\t") for ln in output.splitlines()[1:])}


def _function(lines: dict[int, str], start: int, end: int, where: str) -> list[int]:
    """The line numbers of the enclosing function before `start`, or after `end`."""
    if where == "before":
        defs = [n for n in lines if n <= start and lines[n].lstrip().startswith("def ")]
        return [n for n in lines if (defs[-1] if defs else 0) < n < start]
    stops = [n for n in lines if n > end and lines[n].lstrip().startswith(("def ", "class "))]
    return [n for n in lines if end < n < (stops[0] if stops else 1 << 30)]


def answer(question: str, output: str) -> str:
    """The answer the tool output supports (yes, no), with its evidence."""
    if _ASKED["search"].match(question):
        hits = [ln for ln in output.splitlines()[1:] if ":" in ln]
        return f"Yes: {hits[0]}" if hits else "No: no definition found"
    lines = numbered(output)
    if m := _ASKED["context"].match(question):
        kind = next(k for k in KINDS.values() if k.context == m.group(1))
        body = _function(lines, int(m.group(3)), int(m.group(4)), m.group(2))
        found = [n for n in body if re.search(kind.context_pattern or "$^", lines[n])]
        return f"Yes: line {found[0]} reads `{lines[found[0]].strip()}`" if found else "No."
    m = next(filter(None, (_ASKED[q].match(question) for q in ("construct", "code", "blank"))))
    start, end = int(m.group(1)), int(m.group(2))
    shown = "\n".join(lines.get(n, "") for n in range(start, end + 1))
    if _ASKED["blank"].match(question):
        return f"No: they read `{shown.strip()}`" if shown.strip() else "Yes: they are blank"
    if _ASKED["construct"].match(question):
        kind = next(k for k in KINDS.values() if k.construct == m.group(4))
        return f"No: they read `{shown.strip()}`" if re.search(kind.pattern, shown) else "Yes."
    same = " ".join(m.group(4).split()) in " ".join(shown.split())
    return f"No: they read `{shown.strip()}`" if same else f"Yes: they read `{shown.strip()}`"


def score(pairs: list[dict[str, str]]) -> int:
    """Every question asks for a fact that would disprove the finding: one yes disproves it."""
    answers = [pair["answer"].lower() for pair in pairs]
    if any(a.startswith("yes") for a in answers):
        return 2
    return 5 if any(a.startswith("unknown") for a in answers) else 9


class Verifier:
    """The scripted model, counting each request's prompt characters."""

    def __init__(self) -> None:
        self.sent: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> ModelResponse:
        self.sent.append(request)
        first = request.messages[0]
        assert isinstance(first, UserMessage)
        if "falsification questions instead" in request.system:
            return ModelResponse(text=json.dumps(questions(json.loads(fenced(first.content)))))
        if "You score a reported code defect" in request.system:
            return ModelResponse(
                text=json.dumps({"score": score(json.loads(fenced(first.content)))})
            )
        question = fenced(first.content)
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results and request.tools:
            return ModelResponse(tool_calls=tool_calls(question))
        if not results:
            return ModelResponse(text="Unknown: no tool left to look.")
        return ModelResponse(text=answer(question, results[-1].content))


def step(request: ModelRequest) -> str:
    if "falsification questions instead" in request.system:
        return "questions"
    return "score" if "You score a reported code defect" in request.system else "answers"
