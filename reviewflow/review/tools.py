"""The read-only context tools of the main loop and of verification's answers: their
definitions, arguments and outputs.

Definitions come from `tools.json` (names and arguments are the fixed model contract); each
context tool's arguments are validated by a pydantic model with the same fields. Outputs are
capped at 32 KiB of valid UTF-8. The two symbol tools (`symbol_definition`,
`symbol_references`) answer from the code index of the reviewed tree (`reviewflow.context`)
and are offered only when the review's context is on (in the tool loops and in verification
alike).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
)

from reviewflow.context.query import CodeIndex, DefinitionHit, ReferenceHit
from reviewflow.errors import ToolError
from reviewflow.git.encoding import decode_text, shown
from reviewflow.providers.messages import ToolDefinition
from reviewflow.review import reader
from reviewflow.review.reader import Snapshot, normalize

MAX_READ_LINES = 500
MAX_OUTPUT_BYTES = 32 * 1024
MAX_MATCH_CHARS = 300
MAX_FOUND_FILES = 200
MAX_SYMBOL_HITS = 50
CONTEXT_TOOLS = ("file_read", "code_search", "file_find")
SYMBOL_TOOLS = ("symbol_definition", "symbol_references")
FINAL_TOOLS = ("code_comment", "task_done")


@cache
def definitions() -> tuple[ToolDefinition, ...]:
    """Every tool of the main loop, in a fixed order (byte-identical across files)."""
    raw = json.loads((Path(__file__).parent / "tools.json").read_text(encoding="utf-8"))
    return tuple(ToolDefinition.model_validate(item) for item in raw)


def offered(context_allowed: bool, symbols: bool = False) -> tuple[ToolDefinition, ...]:
    """The tool block of one request: all tools (the symbol tools only with `symbols`), or
    only the final ones once the budget is spent."""
    return tuple(
        d
        for d in definitions()
        if d.name in FINAL_TOOLS or (context_allowed and (d.name not in SYMBOL_TOOLS or symbols))
    )


def answering(symbols: bool = False) -> tuple[ToolDefinition, ...]:
    """The tool block of a verification's answering request: the context tools, and with
    `symbols` the symbol tools (`review.context` on), in the main loop's order."""
    return tuple(
        d for d in definitions() if d.name in CONTEXT_TOOLS or (symbols and d.name in SYMBOL_TOOLS)
    )


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class FileReadArgs(_Args):
    file_path: StrictStr
    start_line: StrictInt = Field(1, ge=1)
    end_line: StrictInt | None = Field(None, ge=1)

    def span(self) -> tuple[int, int]:
        """The requested lines, at most MAX_READ_LINES of them."""
        last = self.start_line + MAX_READ_LINES - 1
        end = last if self.end_line is None else min(self.end_line, last)
        if end < self.start_line:
            raise ToolError(f"end_line {end} is before start_line {self.start_line}")
        return self.start_line, end


class CodeSearchArgs(_Args):
    search_text: StrictStr = Field(min_length=1)
    file_patterns: list[StrictStr] = Field(default_factory=list)
    case_sensitive: StrictBool = True
    use_perl_regexp: StrictBool = False

    @field_validator("file_patterns")
    @classmethod
    def _confined(cls, specs: list[str]) -> list[str]:
        for spec in specs:
            _check_pathspec(spec)
        return specs


class FileFindArgs(_Args):
    query_name: StrictStr = Field(min_length=1)
    case_sensitive: StrictBool = False


class SymbolArgs(_Args):
    name: StrictStr = Field(min_length=1, max_length=200)
    file_path: StrictStr | None = None

    @field_validator("name")
    @classmethod
    def _one_name(cls, name: str) -> str:
        name = name.strip()
        if not name or any(char.isspace() or char in "()" for char in name):
            raise ValueError("give one symbol name, e.g. 'helper' or 'Box.size'")
        return name

    def parts(self) -> tuple[str, str]:
        """(the bare name the index is keyed by, the qualified name with dots)."""
        qualified = ".".join(p for p in re.split(r"::|->|#|\.", self.name) if p)
        if not qualified:
            raise ToolError(f"'{self.name}' is not a symbol name")
        return qualified.rpartition(".")[2], qualified

    def path(self) -> str | None:
        return None if self.file_path is None else normalize(self.file_path)


def cap_output(text: str, limit: int = MAX_OUTPUT_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes (never inside a character), marked when cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    marker = f"\n[output cut at {limit // 1024} KiB of {len(data)} bytes]"
    room = limit - len(marker.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + marker


def read_lines(snapshot: Snapshot, path: str) -> list[str]:
    """The lines of the confined `path` (as the diff reads them: UTF-8, else the encoding its
    attributes or coding line declare, else with U+FFFD for invalid bytes); ToolError for
    binary files."""
    data = reader.read_bytes(snapshot, path)
    if b"\0" in data[:8192]:
        raise ToolError(f"'{path}' is a binary file")
    return decode_text(data, lambda: reader.declared_encoding(snapshot, path))[0].splitlines()


def render_read(path: str, lines: list[str], start: int, end: int) -> str:
    """The file_read output for lines `start`..`end` (1-based) of a file of `lines`."""
    total = len(lines)
    if start > max(total, 1):
        raise ToolError(f"'{path}' has {total} lines; start_line {start} is past the end")
    last = min(end, total)
    body = "\n".join(f"{n}\t{lines[n - 1]}" for n in range(start, last + 1))
    return cap_output(f"{path} lines {start}-{last} of {total}\n{body}")


def code_search(snapshot: Snapshot, args: CodeSearchArgs) -> str:
    """git grep over the snapshot; long matched lines are cut with a marker."""
    flags = ["-P"] if args.use_perl_regexp else ["-F"]
    if not args.case_sensitive:
        flags.append("-i")
    raw = reader.grep(snapshot, flags, args.search_text, args.file_patterns)
    prefix = f"{snapshot.ref}:" if snapshot.ref else ""
    lines = []
    for record in shown(raw.decode("utf-8", "surrogateescape")).splitlines():
        parts = record.split("\0", 2)
        if len(parts) == 3:
            lines.append(f"{parts[0].removeprefix(prefix)}:{parts[1]}:{_cut(parts[2])}")
    if not lines:
        return "no matches"
    return cap_output(f"{len(lines)} matches\n" + "\n".join(lines))


def _cut(text: str) -> str:
    if len(text) <= MAX_MATCH_CHARS:
        return text
    return f"{text[:MAX_MATCH_CHARS]}…[line cut: {len(text)} chars]"


def _check_pathspec(spec: str) -> None:
    """ValueError for a pathspec that could leave the repository or uses magic but exclude."""
    body = spec
    for magic in (":(exclude)", ":!", ":^"):
        if spec.startswith(magic):
            body = spec[len(magic) :]
            break
    else:
        if spec.startswith(":"):
            raise ValueError(f"pathspec '{spec}': only plain patterns and ':!' exclusions work")
    if body.startswith("/") or ".." in body.replace("\\", "/").split("/"):
        raise ValueError(f"pathspec '{spec}' leaves the repository")


def file_find(snapshot: Snapshot, args: FileFindArgs) -> str:
    """Files whose base name contains the keyword (not a glob)."""
    query = args.query_name if args.case_sensitive else args.query_name.lower()
    found = []
    for path in reader.list_files(snapshot):
        name = path.rsplit("/", 1)[-1]
        if query in (name if args.case_sensitive else name.lower()):
            found.append(path)
    if not found:
        return "no files found"
    listed = found[:MAX_FOUND_FILES]
    more = f"\n[{len(found) - len(listed)} more not shown]" if len(found) > len(listed) else ""
    return cap_output(f"{len(found)} files\n" + "\n".join(listed) + more)


def symbol_definition(index: CodeIndex, args: SymbolArgs) -> str:
    """Where a name is defined: path:line, kind and qualified name, signature, first doc line.
    With `file_path` (where the name is used), the definitions it reaches come first."""
    bare, qualified = args.parts()
    hits = index.definitions(bare, from_path=args.path())
    if bare != qualified:
        hits = [h for h in hits if _qualified(h.definition.qualname, qualified)] or hits
    if not hits:
        return (
            f"no definition of '{args.name}' in the source files of the reviewed snapshot "
            "(it may come from a library or a file the index does not read)"
        )
    lines = [f"{len(hits)} definition{'s' * (len(hits) != 1)} of '{args.name}'"]
    for hit in hits[:MAX_SYMBOL_HITS]:
        lines.extend(_definition_lines(hit))
    return _listed(lines, len(hits))


def symbol_references(index: CodeIndex, args: SymbolArgs) -> str:
    """Where a name is used: path:line, the line, the signature of the definition it sits in,
    and how sure the index is it is this definition's use. With `file_path` (the file that
    defines it, even one the change deleted), the uses are tied to that definition."""
    bare, _ = args.parts()
    path = args.path()
    hits = index.references(bare, defined_in=path)
    where = f" (defined in {path})" if path else ""
    if not hits:
        return f"no references to '{args.name}'{where} in the source files of the reviewed snapshot"
    lines = [f"{len(hits)} reference{'s' * (len(hits) != 1)} to '{args.name}'{where}"]
    if path is None and len(index.definitions(bare)) > 1:
        lines.append("[several definitions share this name: give file_path to tie uses to one]")
    lines.extend(_reference_line(index, hit) for hit in hits[:MAX_SYMBOL_HITS])
    return _listed(lines, len(hits))


def _qualified(qualname: str, qualified: str) -> bool:
    return qualname == qualified or qualname.endswith(f".{qualified}")


def _definition_lines(hit: DefinitionHit) -> list[str]:
    definition = hit.definition
    signature = _cut(definition.signature or definition.name)
    lines = [
        f"{hit.path}:{definition.line}: {signature}  [{definition.kind} {definition.qualname}]"
    ]
    if definition.doc:
        lines.append(f"    doc: {_cut(definition.doc)}")
    return lines


def _reference_line(index: CodeIndex, hit: ReferenceHit) -> str:
    reference = hit.reference
    scope = hit.scope.signature or hit.scope.name if hit.scope is not None else "file level"
    how = hit.link or "name match only"
    text = _cut(index.line(hit.path, reference.line))
    return f"{hit.path}:{reference.line}: {text}  [in {_cut(scope)}; {reference.kind}, {how}]"


def _listed(lines: list[str], total: int) -> str:
    more = f"\n[{total - MAX_SYMBOL_HITS} more not shown]" if total > MAX_SYMBOL_HITS else ""
    return cap_output("\n".join(lines) + more)
