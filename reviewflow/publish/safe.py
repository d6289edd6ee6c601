"""Model text made safe to post on a pull/merge request.

On top of `mdsafe` (inline Markdown and HTML escaped, so no tag, image, link or hidden marker
can be formed, and code fenced so it cannot close its fence): no `@` mention can ping a person
or a team (`@name`, `@group/team`, Bitbucket Cloud's `@{account_id}`, Bitbucket Data Center's
`@"User Name"`, Azure DevOps' `@<GUID>`), no `#123` or `!123` can link (and so notify) an
issue, a work item or another request, no line can be a GitLab quick action (`/merge`,
`/approve`), and every text is bounded. Findings are advisory text, never commands.
"""

from __future__ import annotations

import re

from reviewflow.report.mdsafe import md_code, md_inline, md_text, visible

# `@name`, `@{account_id}`, `@"User Name"`, and `@\<`: mdsafe escaped the `<` of `@<GUID>`
_MENTION = re.compile(r'@(?=[\w{"<\\-])')
_REFERENCE = re.compile(r"(?<=[#!])(?=\d)")  # `#12`, `!12`, `owner/repo#12`
_COMMAND = re.compile(r"^(\s*)/", re.MULTILINE)
_BACKTICKS = re.compile(r"`+")
TEXT_LIMIT = 3_000  # one prose field of a finding


def _inert(text: str) -> str:
    """No mention (`@` followed by a word or `<` gets a zero-width space), no `#123`/`!123`
    reference (a zero-width space after its `#` or `!`), no quick action."""
    text = _REFERENCE.sub("\u200b", _MENTION.sub("@\u200b", text))
    return _COMMAND.sub(r"\1\\/", text)


def bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def safe_inline(text: object, limit: int = 300) -> str:
    """One line of inert text (titles, table cells)."""
    return _inert(md_inline(bounded(str(text), limit)))


def safe_text(text: object, limit: int = TEXT_LIMIT) -> str:
    """Inert prose, its lines kept."""
    return _inert(md_text(bounded(str(text), limit)))


def safe_code(text: object, limit: int = TEXT_LIMIT) -> str:
    """A fenced code block (mentions and quick actions are inert inside code)."""
    return md_code(bounded(str(text), limit))


def suggestion_block(code: str, info: str) -> str:
    """A one-click suggestion of `code` in a fence with the platform's `info` string (GitHub's
    ```` ```suggestion ````, GitLab's ```` ```suggestion:-N+0 ```` relative to the comment's
    line, the range's last). The fence is longer than any backtick run inside."""
    body = visible(code).rstrip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"
