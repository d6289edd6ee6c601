"""Adding `silence[]` entries to a rules file as a readable change: the file's text is edited,
never re-dumped, so every other byte (its keys' order, spacing, other rules) stays as it was
and the diff a team reviews is the added entries alone.

The top-level object's members are located with the standard JSON scanner; the new entries go
at the end of an existing `silence` array, or in a new `silence` member after the last one.
The result is parsed again and must hold the old file plus exactly the new entries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reviewflow.errors import RulesError
from reviewflow.rules.schema import SilenceEntry, parse_rules_file

_WS = " \t\r\n"


@dataclass(frozen=True, slots=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


def add_silence(text: str | None, entries: Sequence[dict[str, Any]], source: str) -> str:
    """`text` (a rules file's, None: no file) with `entries` appended to its `silence[]`;
    RulesError naming `source` when the file is not a rules file or the edit would change
    anything else."""
    if not entries:
        return text or ""
    if text is None or not text.strip():
        return json.dumps({"silence": list(entries)}, indent=2, ensure_ascii=False) + "\n"
    before = parse_rules_file(text.encode("utf-8"), source)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    members = _members(body, source)
    indent = _indent_before(body, members[0].key_start) if members else "  "
    unit = indent or "  "
    items = ",\n".join(_render(entry, unit, indent + unit) for entry in entries)
    edited = _insert(body, members, items, indent)
    after = parse_rules_file((bom + edited).encode("utf-8"), source)
    wanted = [*before.silence, *(SilenceEntry.model_validate(entry) for entry in entries)]
    rest = before.model_dump(exclude={"silence"}) == after.model_dump(exclude={"silence"})
    if not rest or after.silence != wanted:
        raise RulesError(f"cannot add silencing rules to {source}: the edit would change it")
    return bom + edited


def _insert(body: str, members: list[_Member], items: str, indent: str) -> str:
    silence = next((m for m in members if m.key == "silence"), None)
    if silence is not None:
        if body[silence.value_start] != "[":
            raise RulesError("'silence' is not a list")
        close = silence.value_end - 1
        if body[silence.value_start + 1 : close].strip():
            last = len(body[:close].rstrip(_WS))
            return body[:last] + ",\n" + items + body[last:]
        return body[: silence.value_start + 1] + "\n" + items + "\n" + indent + body[close:]
    member = f'"silence": [\n{items}\n{indent}]'
    if members:
        end = members[-1].value_end
        return body[:end] + ",\n" + indent + member + body[end:]
    close = body.rindex("}")
    opening = body.index("{")
    return body[: opening + 1] + "\n" + indent + member + "\n" + body[close:]


def _render(entry: dict[str, Any], unit: str, prefix: str) -> str:
    lines = json.dumps(entry, indent=unit, ensure_ascii=False).splitlines()
    return "\n".join(prefix + line for line in lines)


def _indent_before(body: str, index: int) -> str:
    line_start = body.rfind("\n", 0, index) + 1
    head = body[line_start:index]
    return head if not head.strip() else "  "


def _members(body: str, source: str) -> list[_Member]:
    """The top-level object's members, where their keys and values are."""
    decoder = json.JSONDecoder()
    at = _skip(body, 0)
    if body[at : at + 1] != "{":
        raise RulesError(f"invalid rules file {source}: the top level must be a JSON object")
    at = _skip(body, at + 1)
    out: list[_Member] = []
    while body[at : at + 1] != "}":
        key, after_key = decoder.raw_decode(body, at)
        colon = _skip(body, after_key)
        start = _skip(body, colon + 1)
        _, end = decoder.raw_decode(body, start)
        out.append(_Member(str(key), at, start, end))
        at = _skip(body, end)
        if body[at : at + 1] == ",":
            at = _skip(body, at + 1)
    return out


def _skip(body: str, at: int) -> int:
    while at < len(body) and body[at] in _WS:
        at += 1
    return at
