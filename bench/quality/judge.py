"""The judge: one model request per (golden comment, finding) pair, as the Martian benchmark's
step 3 asks it ("do these describe the same underlying issue?"), and the extraction request
that splits a free-text review (a peer tool's) into candidate issues, as its step 2 does.

Requests go through reviewflow's own model clients (any protocol or endpoint of its config),
pointed at the recording proxy; every verdict is kept with its reasoning and usage.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reviewflow.errors import ProviderError, TransientProviderError
from reviewflow.prompts import render, templates_digest
from reviewflow.providers.base import Provider
from reviewflow.providers.messages import ModelRequest, Usage, UserMessage

PROMPTS = Path(__file__).resolve().parent / "prompts"
ATTEMPTS = 3
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_ARRAY = re.compile(r"\[.*\]", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Verdict:
    golden: int
    finding: int
    match: bool
    confidence: float
    reasoning: str
    by: str  # "judge" or "line-window"
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


Ask = Callable[[ModelRequest], tuple[str, Usage]]


def provider_ask(provider: Provider, pause: float = 2.0) -> Ask:
    """Ask `provider`, up to ATTEMPTS times while its error is transient."""

    def ask(request: ModelRequest) -> tuple[str, Usage]:
        for attempt in range(ATTEMPTS):
            try:
                response = provider.complete(request)
                return response.text, response.usage
            except TransientProviderError:
                if attempt == ATTEMPTS - 1:
                    raise
                time.sleep(pause * 2**attempt)
        raise AssertionError("unreachable")

    return ask


def judge_request(golden: str, finding: str, temperature: float | None = 0.0) -> ModelRequest:
    """One pair's request; no output limit (a reasoning model's thinking counts against it),
    temperature 0 unless the model refuses any but its default (`None`)."""
    user = render(PROMPTS, "judge_user.j2", golden=golden, finding=finding)
    return ModelRequest(
        system=render(PROMPTS, "judge_system.j2"),
        messages=(UserMessage(content=user),),
        temperature=temperature,
    )


def judge_pairs(
    ask: Ask,
    pairs: list[tuple[int, int]],
    golden: list[str],
    findings: list[str],
    workers: int,
    temperature: float | None = 0.0,
) -> list[Verdict]:
    """A verdict for every (golden index, finding index) pair, in the order given."""

    def one(pair: tuple[int, int]) -> Verdict:
        g, f = pair
        try:
            text, usage = ask(judge_request(golden[g], findings[f], temperature))
        except ProviderError as exc:
            return Verdict(g, f, False, 0.0, "", "judge", error=str(exc).splitlines()[0])
        return parse_verdict(g, f, text, usage)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, pairs))


def parse_verdict(g: int, f: int, text: str, usage: Usage) -> Verdict:
    """The judge's JSON answer (fenced or bare); an unreadable answer is an error verdict."""
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    match = _OBJECT.search(text)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("match"), bool):
        return Verdict(g, f, False, 0.0, "", "judge", "unreadable answer", prompt, completion)
    confidence = data.get("confidence")
    return Verdict(
        golden=g,
        finding=f,
        match=data["match"],
        confidence=float(confidence) if isinstance(confidence, int | float) else 0.0,
        reasoning=str(data.get("reasoning") or ""),
        by="judge",
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def extract_issues(
    ask: Ask, review: str, temperature: float | None = 0.0
) -> tuple[list[str], Usage]:
    """The distinct issues of a free-text review (a peer tool's), as candidate texts."""
    if not review.strip():
        return [], Usage()
    request = ModelRequest(
        system=render(PROMPTS, "extract_system.j2"),
        messages=(UserMessage(content=render(PROMPTS, "extract_user.j2", review=review)),),
        temperature=temperature,
    )
    text, usage = ask(request)
    match = _ARRAY.search(text)
    try:
        items = json.loads(match.group(0)) if match else []
    except ValueError:
        items = []
    return [str(item) for item in items if isinstance(item, str) and item.strip()], usage


def prompts_digest() -> str:
    """Which judge and extraction prompts scored a run (recorded in its results)."""
    return templates_digest(PROMPTS)[:12]
