"""A deterministic scripted reviewer for whole-review tests, answering any request order.

For each reviewed file it reads the file, reports the findings planned for it, and finishes.
Tool-free stages get fixed answers: plan guidance, no relocation, no deletions. Requests of
concurrent files may arrive in any order: the reviewer works out the stage and the file from
each request itself.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tests.wire_server import Call, HttpError, RecordedRequest, Reply, Text, ToolCalls

STAGE_MARKERS = {
    "plan": "planning the review of one changed file",
    "compress": "You compress the earlier rounds",
    "relocate": "You are the relocation stage",
    "filter": "You are the review filter",
    "localize": "You translate the findings",
    "verify_questions": "You are the verification stage of a code review",
    "verify_answer": "You answer one question about a repository",
    "verify_score": "You score a reported code defect",
}

# The context pack's block in a request's JSON text (its label's quotes escaped).
_CONTEXT_PACK = re.compile(r'<untrusted-data label=\\"context pack:.*?</untrusted-data>', re.S)


class ScriptedReviewer:
    """`findings[path]` are the `code_comment` findings the model reports for that file;
    `verify_scores[title]` the score its verification gives a finding (default 9)."""

    def __init__(
        self,
        findings: Mapping[str, list[dict[str, Any]]],
        fail_paths: Mapping[str, int] | None = None,
        verify_scores: Mapping[str, int] | None = None,
    ) -> None:
        self.findings = dict(findings)
        self.fail_paths = dict(fail_paths or {})  # path -> status every main request gets
        self.verify_scores = dict(verify_scores or {})
        self.stages: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, record: RecordedRequest) -> Reply:
        text = json.dumps(record.body, ensure_ascii=False)
        stage = stage_of(text)
        with self._lock:
            self.stages[stage] += 1
        if stage == "plan":
            return Text("Check the changed functions for error handling.")
        if stage == "compress":
            return Text("Read the file; nothing recorded yet.")
        if stage in ("relocate", "filter"):
            return Text("[]")
        if stage == "localize":
            return HttpError(400)  # English reviews send none; a test that wants one scripts it
        if stage.startswith("verify_"):
            return self._verify(stage, record, text)
        return self._main(record, text)

    def _verify(self, stage: str, record: RecordedRequest, text: str) -> Reply:
        """Two questions tagged with the finding's title number (never its title or
        reasoning); each answered after one read of the file; the score from the tag."""
        titles = sorted({f["title"] for found in self.findings.values() for f in found})
        if stage == "verify_questions":
            tag = next(i for i, title in enumerate(titles) if title in text)
            return Text(json.dumps([f"[q{tag}] Is it guarded?", f"[q{tag}] Is it handled?"]))
        if stage == "verify_score":
            tag = next(i for i in range(len(titles)) if f"[q{i}]" in text)
            return Text(json.dumps({"score": self.verify_scores.get(titles[tag], 9)}))
        if assistant_turns(record) == 0:
            path = next(p for p in sorted(self.findings, key=len, reverse=True) if p in text)
            return ToolCalls(Call("file_read", {"file_path": path}))
        return Text("No: nothing in the file guards it.")

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        text = _CONTEXT_PACK.sub("", text)  # it names other files: the one reviewed is in the diff
        path = next((p for p in sorted(self.findings, key=len, reverse=True) if p in text), None)
        if path is None:
            return ToolCalls(Call("task_done", {}))
        if path in self.fail_paths:
            return HttpError(self.fail_paths[path])
        rounds = assistant_turns(record)
        if rounds == 0:
            return ToolCalls(Call("file_read", {"file_path": path}))
        if rounds == 1 and self.findings[path]:
            return ToolCalls(*(Call("code_comment", {"finding": f}) for f in self.findings[path]))
        return ToolCalls(Call("task_done", {}))


def stage_of(text: str) -> str:
    """The stage a request (its JSON body as text) comes from: a STAGE_MARKERS key, or main."""
    return next((name for name, mark in STAGE_MARKERS.items() if mark in text), "main")


def assistant_turns(record: RecordedRequest) -> int:
    """How many model turns the conversation in this request already holds."""
    body = record.body
    if record.protocol == "gemini":
        return sum(1 for item in body.get("contents", []) if item.get("role") == "model")
    return sum(1 for item in body.get("messages", []) if item.get("role") == "assistant")
