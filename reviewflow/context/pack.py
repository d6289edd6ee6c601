"""The context pack of one reviewed file: what the model is given beyond the diff.

For each symbol whose definition the change adds, edits, renames or deletes: where it is used
elsewhere (the calling line and the signature of the function it sits in). For each symbol the
changed lines use that another file defines: its signature and first docstring line. Within a
token budget, in a fixed order; a deleted or renamed symbol still referenced is always shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewflow.context.changes import Changed, changed_symbols
from reviewflow.context.languages import language_name
from reviewflow.context.parse import parse_source
from reviewflow.context.query import CodeIndex
from reviewflow.context.records import FileIndex, IndexStats
from reviewflow.git.models import FileDiff, FileStatus

MAX_REFERENCES = 20
"""References listed per changed symbol at most (the rest are counted as omitted)."""
ALWAYS_SHOWN = 5
"""References of a deleted or renamed symbol shown whatever the budget."""

ChangeKind = Literal["added", "edited", "renamed", "deleted"]


class ReferenceEntry(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    path: str
    line: int
    in_: str = Field(alias="in")
    """The signature of the definition the use sits in (empty at file level)."""
    text: str
    """The calling line."""
    link: str


class ChangedSymbol(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    kind: str
    line: int
    change: ChangeKind
    signature: str
    old_name: str | None = None
    references: tuple[ReferenceEntry, ...] = ()
    omitted: int = 0


class UsedDefinition(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    line: int
    signature: str
    doc: str = ""


class ContextPack(BaseModel):
    """The pack of one file, its rendering for the model and its tokens."""

    model_config = ConfigDict(frozen=True)

    path: str
    tokens: int = 0
    changed_symbols: tuple[ChangedSymbol, ...] = ()
    used_definitions: tuple[UsedDefinition, ...] = ()
    omitted: int = 0
    """References and definitions left out for the budget."""

    def record(self) -> dict[str, Any]:
        """The JSON shape of `reviewflow context --json`."""
        return {
            "path": self.path,
            "tokens": self.tokens,
            "changed_symbols": [
                {
                    "name": s.name,
                    "kind": s.kind,
                    "line": s.line,
                    "change": s.change,
                    **({"old_name": s.old_name} if s.old_name else {}),
                    "references": [
                        {"path": r.path, "line": r.line, "in": r.in_} for r in s.references
                    ],
                }
                for s in self.changed_symbols
            ],
            "used_definitions": [
                {"name": d.name, "path": d.path, "line": d.line, "signature": d.signature}
                for d in self.used_definitions
            ],
        }

    def render(self) -> str:
        """The text the model is given (empty when there is nothing to say)."""
        if not self.changed_symbols and not self.used_definitions:
            return ""
        lines = [_title(self.path)]
        if self.changed_symbols:
            lines.append(_CHANGED)
            for symbol in self.changed_symbols:
                lines.append(_symbol_line(symbol))
                lines.extend(_reference_line(r) for r in symbol.references)
                if symbol.omitted:
                    lines.append(f"    ({symbol.omitted} more not shown)")
        if self.used_definitions:
            lines.append(_USED)
            lines.extend(_definition_line(d) for d in self.used_definitions)
        return "\n".join(lines)


def context_record(packs: Sequence[ContextPack], stats: IndexStats) -> dict[str, Any]:
    """The whole `reviewflow context --json` document: every file's pack and the index build."""
    return {"files": [pack.record() for pack in packs], "index": stats.model_dump()}


_CHANGED = "Changed definitions and where they are used:"
_USED = "Defined elsewhere and used by the changed lines:"


def _title(path: str) -> str:
    return f"Context for {path} (from the code index of the reviewed tree):"


def _symbol_line(symbol: ChangedSymbol) -> str:
    renamed = f" (was {symbol.old_name})" if symbol.old_name else ""
    where = f"old line {symbol.line}" if symbol.change == "deleted" else f"line {symbol.line}"
    head = f"- {symbol.change} {symbol.kind} {symbol.name}{renamed}, {where}"
    return f"{head}: {symbol.signature}" if symbol.signature else head


def _reference_line(ref: ReferenceEntry) -> str:
    where = f" in `{ref.in_}`" if ref.in_ else ""
    return f"    {ref.path}:{ref.line}{where}: {ref.text}"


def _definition_line(d: UsedDefinition) -> str:
    doc = f" - {d.doc}" if d.doc else ""
    return f"- {d.path}:{d.line} {d.signature}{doc}"


def build_pack(
    file: FileDiff,
    old_text: str | None,
    new_text: str | None,
    index: CodeIndex,
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    eligible: Callable[[str], bool] = lambda path: True,
) -> ContextPack:
    """The pack of `file` (its two sides' text and hunks) against the new side's `index`.

    `eligible` says which files may fill a pack (the filter's excluded files may not).
    """
    old_record = _parse(file.old_path or file.path, old_text)
    new_record = _parse(file.path, new_text) if file.status != FileStatus.DELETED else None
    symbols = changed_symbols(file, old_record, new_record, old_text, new_text)
    candidates = [_with_references(c, file, index, eligible) for c in symbols]
    used = _used_definitions(file, new_record, index, eligible)
    return _fit(file.path, candidates, used, budget_tokens, count_tokens)


def _parse(path: str, text: str | None) -> FileIndex | None:
    language = language_name(path)
    if text is None or language is None:
        return None
    return parse_source(text.encode("utf-8", "surrogateescape"), language)


def _with_references(
    changed: Changed, file: FileDiff, index: CodeIndex, eligible: Callable[[str], bool]
) -> ChangedSymbol:
    definition = changed.definition
    names = [n for n in (changed.old_name, definition.name) if n]
    origin = file.path
    gone = changed.change in ("deleted", "renamed")  # an import of it breaks too
    entries: list[ReferenceEntry] = []
    for name in dict.fromkeys(names):
        old_side = changed.change == "deleted" or name == changed.old_name
        defined_in = (file.old_path or origin) if old_side else origin
        for hit in index.references(name, defined_in, linked_only=True):
            ref = hit.reference
            own = hit.path == origin and definition.line <= ref.line <= definition.end_line
            if own or (ref.kind == "import" and not gone) or not eligible(hit.path):
                continue
            scope = hit.scope.signature if hit.scope is not None else ""
            text = index.line(hit.path, ref.line)
            entries.append(
                ReferenceEntry(
                    path=hit.path, line=ref.line, text=text, link=hit.link or "", **{"in": scope}
                )
            )
    return ChangedSymbol(
        name=definition.name,
        kind=definition.kind,
        line=definition.line,
        change=changed.change,
        signature=definition.signature,
        old_name=changed.old_name if changed.change == "renamed" else None,
        references=tuple(entries[:MAX_REFERENCES]),
        omitted=max(0, len(entries) - MAX_REFERENCES),
    )


def _used_definitions(
    file: FileDiff, record: FileIndex | None, index: CodeIndex, eligible: Callable[[str], bool]
) -> list[UsedDefinition]:
    if record is None:
        return []
    added = file.changed_lines
    own = {d.name for d in record.definitions}
    out: dict[str, UsedDefinition] = {}
    for ref in record.references:
        if ref.line not in added or ref.name in own or ref.name in out:
            continue
        hit = index.resolve(file.path, ref)
        if hit is None or hit.path == file.path or not eligible(hit.path):
            continue
        d = hit.definition
        out[ref.name] = UsedDefinition(
            name=d.name, path=hit.path, line=d.line, signature=d.signature, doc=d.doc
        )
    return list(out.values())


class _Budget:
    """Tokens left, counted line by line (each with its newline, so the sum bounds the whole)."""

    def __init__(self, budget: int, count: Callable[[str], int]) -> None:
        self.left = budget
        self.count = count

    def cost(self, lines: list[str]) -> int:
        return sum(self.count(line + "\n") for line in lines)

    def take(self, lines: list[str], *, always: bool = False) -> bool:
        cost = self.cost(lines)
        if not always and cost > self.left:
            return False
        self.left -= cost
        return True


_MORE = "    (99999 more not shown)"  # the widest omitted-references line, reserved per symbol


def _fit(
    path: str,
    symbols: list[ChangedSymbol],
    used: list[UsedDefinition],
    budget: int,
    count: Callable[[str], int],
) -> ContextPack:
    """Keep what fits `budget`, in a fixed order: what must be shown, each symbol with its first
    reference, the used definitions, then the remaining references round by round."""
    if not symbols and not used:
        return ContextPack(path=path)
    left = _Budget(budget, count)
    left.take([_title(path), _CHANGED, _USED], always=True)
    shown = [0] * len(symbols)
    listed = [False] * len(symbols)
    for i, s in enumerate(symbols):  # always shown: deleted or renamed and still referenced
        if s.change in ("deleted", "renamed") and s.references:
            shown[i] = min(ALWAYS_SHOWN, len(s.references))
            refs = [_reference_line(r) for r in s.references[: shown[i]]]
            listed[i] = left.take([_symbol_line(s), *refs, _MORE], always=True)
    for i, s in enumerate(symbols):
        first = [_reference_line(r) for r in s.references[:1]]
        if not listed[i] and left.take([_symbol_line(s), *first, _MORE]):
            listed[i], shown[i] = True, len(first)
    kept_used = [d for d in used if left.take([_definition_line(d)])]
    _more_references(symbols, listed, shown, left)
    kept = [
        s.model_copy(
            update={
                "references": s.references[: shown[i]],
                "omitted": s.omitted + len(s.references) - shown[i],
            }
        )
        for i, s in enumerate(symbols)
        if listed[i]
    ]
    omitted = sum(len(s.references) + s.omitted for i, s in enumerate(symbols) if not listed[i])
    omitted += len(symbols) - len(kept) + len(used) - len(kept_used)
    pack = ContextPack(
        path=path, changed_symbols=tuple(kept), used_definitions=tuple(kept_used), omitted=omitted
    )
    return pack.model_copy(update={"tokens": count(pack.render()) if kept or kept_used else 0})


def _more_references(
    symbols: list[ChangedSymbol], listed: list[bool], shown: list[int], left: _Budget
) -> None:
    """Add one more reference of each listed symbol per round while the budget allows."""
    progress = True
    while progress:
        progress = False
        for i, s in enumerate(symbols):
            more = listed[i] and shown[i] < len(s.references)
            if more and left.take([_reference_line(s.references[shown[i]])]):
                shown[i] += 1
                progress = True
