"""Prompt size of a review: a 3-file change where the model reads each file once.

Target: total prompt characters of the review <= 50,000 (a LangChain peer sends 51,188 for the
same investigation) with the rule a user actually gets (the built-in Python rule), and a shared
prefix (system + tools) byte-identical across the files. The longest built-in rule of each kind
(language, target, fallback) is measured too, sent as a repository rule, so that any built-in rule
is known to keep the same review within the target.
Prompt characters = system + every message's text and tool-call arguments + the tool block
(name, description and JSON Schema) of every request, as our normalized request holds them.
The model is the scripted wire server (no network); the figures are deterministic.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reviewflow.config import ReviewSettings
from reviewflow.providers import ProviderPool
from reviewflow.providers.messages import AssistantMessage, ModelRequest, ModelResponse
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import file_jobs, snapshot_of
from reviewflow.review.loop import review_chunk
from reviewflow.rules.system import builtin_system_rules
from reviewflow.select.scope import collect, select
from tests.gitutil import GitRepo
from tests.wire_server import Call, ToolCalls, WireServer

FILES = ("billing/invoice.py", "billing/tax.py", "api/handlers.py")


def source(module: str, functions: int) -> str:
    """A plausible module of `functions` small functions (about 60 lines)."""
    body = [
        f'"""{module}: helpers."""',
        "",
        "import logging",
        "",
        "log = logging.getLogger(__name__)",
    ]
    for i in range(functions):
        body += [
            "",
            "",
            f"def step_{i}(items, rate=0.{i + 1}):",
            f'    """Apply step {i} to every item."""',
            "    total = 0",
            "    for item in items:",
            f"        total += item.amount * rate + {i}",
            "    return round(total, 2)",
        ]
    return "\n".join(body) + "\n"


def characters(request: ModelRequest) -> int:
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.content)
        if isinstance(message, AssistantMessage):
            chars += sum(len(call.name) + len(call.arguments_json) for call in message.tool_calls)
    return chars + sum(len(tool.model_dump_json()) for tool in request.tools)


def measure(rule: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp, WireServer() as wire:
        os.environ["REVIEWFLOW_HOME"] = str(Path(tmp) / "home")
        repo = GitRepo.init(Path(tmp) / "repo")
        for path in FILES:
            repo.write(path, source(path, 7))
        if rule is not None:
            repo.write(
                ".reviewflow/rules.json", json.dumps({"rules": [{"path": "**", "rule": rule}]})
            )
        repo.commit("base")
        for path in FILES:
            repo.write(path, source(path, 7).replace("rate=0.3", "rate=0.35").replace("+ 5", "- 5"))
        sha = repo.commit("change")
        request = ReviewRequest.from_flags(
            str(repo.root), commit=sha, home=os.environ["REVIEWFLOW_HOME"]
        )
        settings = ReviewSettings()
        scope = select(collect(request, 3), request, settings.max_file_bytes)
        jobs = file_jobs(scope, settings, "en-US")
        sent: list[ModelRequest] = []
        with ProviderPool(wire.settings("openai"), 1) as pool:

            def send(req: ModelRequest) -> ModelResponse:
                sent.append(req)
                return pool.complete(req)

            for job in jobs:
                wire.script(
                    "openai",
                    [
                        ToolCalls(Call("file_read", {"file_path": job.path})),
                        ToolCalls(Call("task_done")),
                    ],
                )
                review_chunk(job, 0, None, snapshot_of(scope), settings, send)
        bodies = [r.body for r in wire.requests()]
        prefixes = {json.dumps([b["messages"][0], b["tools"]]) for b in bodies}
        return {
            "files": len(jobs),
            "requests": len(sent),
            "prompt_chars": sum(characters(r) for r in sent),
            "wire_body_bytes": sum(len(json.dumps(b)) for b in bodies),
            "system_chars": len(sent[0].system),
            "tools_chars": sum(len(t.model_dump_json()) for t in sent[0].tools),
            "rule_chars": len(jobs[0].rule),
            "identical_prefix": len(prefixes) == 1,
        }


def longest_builtin_rules() -> dict[str, tuple[str, str]]:
    """The longest built-in rule of each kind: kind -> (name, text)."""
    longest: dict[str, tuple[str, str]] = {}
    for rule in builtin_system_rules().rules:
        if len(rule.text) > len(longest.get(rule.kind, ("", ""))[1]):
            longest[rule.kind] = (rule.name, rule.text)
    return longest


def main() -> None:
    results = {
        "short user rule": measure("Check money arithmetic and rounding."),
        "built-in Python rule": measure(None),
    }
    for kind, (name, text) in sorted(longest_builtin_rules().items()):
        results[f"longest {kind} rule ({name}) as a repository rule"] = measure(text)
    for name, figures in results.items():
        print(f"{name}: {json.dumps(figures)}")
    over = [name for name, figures in results.items() if figures["prompt_chars"] > 50_000]  # type: ignore[operator]
    verdict = f"NOT met: {over}" if over else "met"
    print(f"target <= 50,000 prompt characters with every rule measured: {verdict}")


if __name__ == "__main__":
    main()
