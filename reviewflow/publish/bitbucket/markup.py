"""reviewflow's comment Markdown as Bitbucket Cloud shows it, and back.

Bitbucket Cloud renders no HTML in comments: it escapes it, so an HTML comment shows as its
text (`content.html` of a comment whose raw holds `<x>` is `&lt;x&gt;`). The hidden markers
(`markers.py`, `<!-- reviewflow:... -->` at a comment's very start) are therefore written as a
Markdown link reference definition, `[//]: # (reviewflow:...)` on a line of its own: Markdown
(CommonMark and Python-Markdown alike) defines a link with it and renders nothing. Read back,
that first line is the HTML comment again, so the publisher and `markers.py` stay neutral.

The few HTML tags our own templates use, each alone on its line (`<details><summary>`,
`</details>`, `<sub>`), become Markdown on the way out (one way: nothing reads them back).
Model text cannot form any of them: `safe.py` escapes every `<` and `[` it wrote.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"\A<!-- (reviewflow:[^\n()]*?) -->")
_DEFINITION = re.compile(r"\A\[//\]: # \((reviewflow:[^\n()]*)\)\n")
_TAGS = (
    (re.compile(r"^<details><summary>(.+)</summary>$", re.MULTILINE), r"**\1**"),
    (re.compile(r"^</details>$", re.MULTILINE), ""),
    (re.compile(r"^<sub>(.+)</sub>$", re.MULTILINE), r"*\1*"),
)


def to_bitbucket(body: str) -> str:
    """`body` as Bitbucket Cloud keeps it hidden: the leading marker a link reference
    definition on its own line, our templates' HTML tags as Markdown."""
    out = _MARKER.sub(lambda m: f"[//]: # ({m.group(1)})\n", body, count=1)
    for pattern, markdown in _TAGS:
        out = pattern.sub(markdown, out)
    return out


def from_bitbucket(raw: str) -> str:
    """A comment's raw Markdown with its leading marker as `markers.py` reads it."""
    return _DEFINITION.sub(lambda m: f"<!-- {m.group(1)} -->", raw, count=1)
