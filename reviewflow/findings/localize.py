"""Localization: one tool-free batch rewrites the four text fields of each finding, by ID."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from reviewflow.findings.answers import PROMPTS, AnswerError, Question, ask, parse_array, text_field
from reviewflow.findings.models import Finding
from reviewflow.models import ReviewWarning, cut_fields
from reviewflow.prompts import render
from reviewflow.review.records import RequestRecord, Send

TEXT_FIELDS = ("title", "problem", "evidence", "suggestion")
LOCALIZE_FORMAT = (
    '[{"id": "F0123456789ab", "title": "...", "problem": "...", "evidence": "...", '
    '"suggestion": "..."}]'
)
LOCALIZE_WRAPPERS = ("findings", "translations")
_ENGLISH = re.compile(r"en(-[A-Za-z0-9]+)*", re.IGNORECASE)


class Localized(BaseModel):
    """Findings after localization (the originals when it failed or was not needed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    findings: tuple[Finding, ...] = ()
    records: tuple[RequestRecord, ...] = ()
    complete: bool = True
    warnings: tuple[ReviewWarning, ...] = ()


def is_english(language: str) -> bool:
    """Whether `language` (a tag such as en, en-US, en-GB) is English: no localization."""
    return _ENGLISH.fullmatch(language.strip()) is not None


def localize(findings: Sequence[Finding], language: str, send: Send) -> Localized:
    """Rewrite title, problem, evidence and suggestion into `language` in one request; nothing
    else can change. On failure the originals stay and the review is incomplete."""
    if is_english(language) or not findings:
        return Localized(findings=tuple(findings))
    question = Question(
        stage="localize",
        path=None,
        system=render(PROMPTS, "localize_system.j2", language=language, form=LOCALIZE_FORMAT),
        user=render(PROMPTS, "localize_user.j2", findings=_listing(findings)),
        answer_format=LOCALIZE_FORMAT,
        warning_code="localization_failed",
        what=f"localization into {language}",
    )
    originals = {f.id: f for f in findings}
    asked = ask(question, lambda text: _parse_texts(text, originals), send)
    if asked.value is None:
        return Localized(
            findings=tuple(findings), records=asked.records, complete=False, warnings=asked.warnings
        )
    texts = asked.value
    rewritten = tuple(f.model_copy(update=texts[f.id]) for f in findings)
    return Localized(findings=rewritten, records=asked.records)


def _listing(findings: Sequence[Finding]) -> str:
    rows = [{"id": f.id, **{key: getattr(f, key) for key in TEXT_FIELDS}} for f in findings]
    return json.dumps(rows, indent=1, ensure_ascii=False)


def _parse_texts(text: str, originals: Mapping[str, Finding]) -> dict[str, dict[str, str]]:
    """The new text fields per finding ID: exactly one entry per finding, strings only; any
    other key is ignored, and a text that was not empty cannot become empty."""
    texts: dict[str, dict[str, str]] = {}
    for item in parse_array(text, LOCALIZE_WRAPPERS):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise AnswerError('every entry must be an object with a string "id"')
        fid = item["id"]
        if fid not in originals or fid in texts:
            raise AnswerError(f"unknown or repeated finding ID {fid!r}")
        texts[fid] = _fields(item, originals[fid])
    missing = sorted(set(originals) - set(texts))
    if missing:
        raise AnswerError(f"findings missing from the answer: {', '.join(missing)}")
    return texts


def _fields(item: dict[str, object], original: Finding) -> dict[str, str]:
    fields: dict[str, str] = {}
    for key in TEXT_FIELDS:
        value = text_field(item, key)
        if value is None:
            continue
        if not value.strip() and getattr(original, key).strip():
            raise AnswerError(f'"{key}" of {item["id"]!r} is empty')
        fields[key] = cut_fields(value.strip(), key)  # model_copy does not validate
    return fields
