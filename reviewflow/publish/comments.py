"""A finding as a comment on its lines: its marker, inert text, and a one-click suggestion
when its platform has them and its fix is code that replaces exactly the lines it comments
on."""

from __future__ import annotations

import re

from reviewflow.findings.models import Finding
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.safe import safe_code, safe_inline, safe_text, suggestion_block
from reviewflow.pullrequest.markers import finding_marker
from reviewflow.pullrequest.models import NewComment
from reviewflow.pullrequest.state import PriorFinding

_FENCED = re.compile(r"^(`{3,}|~{3,})[^\n`]*\n(.*?)\n\1[ \t]*$", re.DOTALL | re.MULTILINE)
MAX_SUGGESTION_LINES = 200
MAX_SUGGESTION_CHARS = 8_000  # with the bounded prose, a comment stays under 16,000


def replacement(finding: Finding) -> tuple[str, str] | None:
    """The code of the finding's suggestion and the prose around it, when the suggestion holds
    exactly one fenced block that rewrites the commented lines: it differs from them, starts at
    their indentation and is not longer than MAX_SUGGESTION_LINES (else None: prose only)."""
    blocks = list(_FENCED.finditer(finding.suggestion))
    if len(blocks) != 1:
        return None
    code = blocks[0].group(2)
    first_old = next((line for line in finding.existing_code.splitlines() if line.strip()), "")
    first_new = next((line for line in code.splitlines() if line.strip()), "")
    if (
        code.strip() == finding.existing_code.strip()
        or _indent(first_old) != _indent(first_new)
        or code.count("\n") >= MAX_SUGGESTION_LINES
        or len(code) > MAX_SUGGESTION_CHARS
    ):
        return None
    prose = (
        finding.suggestion[: blocks[0].start()] + finding.suggestion[blocks[0].end() :]
    ).strip()
    return code, prose


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def prose_and_code(text: str) -> str:
    """`text` inert, its fenced blocks kept as code blocks (indentation and all), its prose
    as text: for a suggestion posted without a one-click block."""
    parts, at = [], 0
    for block in _FENCED.finditer(text):
        if prose := text[at : block.start()].strip():
            parts.append(safe_text(prose))
        parts.append(safe_code(block.group(2)))
        at = block.end()
    if rest := text[at:].strip():
        parts.append(safe_text(rest))
    return "\n\n".join(parts)


def comment_body(finding: Finding, platform: str) -> str:
    """The comment for `finding`: marker first, then severity, title, problem, evidence and
    the suggestion (a suggestion block when `replacement` finds one)."""
    head = f"**{finding.severity.value.upper()}** · {finding.category.value}"
    marker = finding_marker(finding.fingerprint, PriorFinding.of(finding))
    parts = [marker, f"{head} · {safe_inline(finding.title)}"]
    parts.append(safe_text(finding.problem))
    if finding.evidence:
        parts.append("**Evidence:** " + safe_text(finding.evidence))
    suggestion = spec_of(platform).suggestion
    fix = replacement(finding) if suggestion is not None else None
    if fix is not None and suggestion is not None:
        code, prose = fix
        if prose:
            parts.append("**Suggestion:** " + safe_text(prose))
        lines = finding.end_line - finding.start_line + 1
        parts.append(suggestion_block(code, suggestion(lines)))
    elif finding.suggestion:
        text = prose_and_code(finding.suggestion)
        parts.append("**Suggestion:**" + ("\n\n" if text.startswith("`") else " ") + text)
    agreed = f" · found by {finding.agreement} passes" if finding.agreement else ""
    footer = f"<sub>reviewflow · {finding.id} · confidence {finding.confidence:.2f}{agreed}</sub>"
    return "\n\n".join([*parts, footer])


def new_comment(finding: Finding, platform: str, old_path: str | None = None) -> NewComment:
    return NewComment(
        fingerprint=finding.fingerprint,
        path=finding.path,
        old_path=old_path or finding.path,
        start_line=finding.start_line,
        end_line=finding.end_line,
        body=comment_body(finding, platform),
        end_length=len(finding.existing_code.split("\n")[-1].rstrip("\r")),
    )
