"""Untrusted text (model output, repository names) made inert for Markdown.

Every character that can start inline Markdown or HTML is backslash-escaped, and so is
whatever would open a block at the start of a line (`#`, `-`, `1.`, `=`), so a title with
backticks, `|`, `<script>` or `# heading` renders as the characters it holds; control
characters are shown as `\\xNN`; code goes in fences longer than any backtick run inside.
"""

from __future__ import annotations

import re

from reviewflow.report.textsafe import unsurrogate

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_INLINE = re.compile(r"([\\`*_\[\]<>|~&$#])")
_LINE_START = re.compile(r"^(\d{0,9})([+\-=.)])")
_BACKTICKS = re.compile(r"`+")


def visible(text: str) -> str:
    """`text` as valid UTF-8 with control characters other than tab and newline as `\\xNN`."""
    clean = unsurrogate(text).replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean)


def _escape(line: str) -> str:
    """Inline markers escaped everywhere; block markers (headings, lists, setext lines)
    where they would act, at the start of the line."""
    return _LINE_START.sub(r"\1\\\2", _INLINE.sub(r"\\\1", line))


def md_inline(text: object) -> str:
    """One line of inert Markdown (safe in headings and table cells): newlines become spaces."""
    return _escape(" ".join(visible(str(text)).split()))


def md_text(text: object) -> str:
    """Inert Markdown prose: each non-blank line escaped, lines joined by hard breaks."""
    lines = [" ".join(line.split()) for line in visible(str(text)).split("\n")]
    return "\\\n".join(_escape(line) for line in lines if line)


def md_code(text: object) -> str:
    """A fenced code block holding `text` verbatim; the fence cannot be closed from inside."""
    body = visible(str(text)).rstrip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"
