"""The read-only context tools of the main loop: their definitions, arguments and outputs.

Definitions come from `tools.json` (names and arguments are the fixed model contract); each
context tool's arguments are validated by a pydantic model with the same fields. Outputs are
capped at 32 KiB of valid UTF-8.
"""

from __future__ import annotations

import json
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

from reviewflow.errors import ToolError
from reviewflow.git.encoding import decode_text, shown
from reviewflow.providers.messages import ToolDefinition
from reviewflow.review import reader
from reviewflow.review.reader import Snapshot

MAX_READ_LINES = 500
MAX_OUTPUT_BYTES = 32 * 1024
MAX_MATCH_CHARS = 300
MAX_FOUND_FILES = 200
CONTEXT_TOOLS = ("file_read", "code_search", "file_find")
FINAL_TOOLS = ("code_comment", "task_done")


@cache
def definitions() -> tuple[ToolDefinition, ...]:
    """Every tool of the main loop, in a fixed order (byte-identical across files)."""
    raw = json.loads((Path(__file__).parent / "tools.json").read_text(encoding="utf-8"))
    return tuple(ToolDefinition.model_validate(item) for item in raw)


def offered(context_allowed: bool) -> tuple[ToolDefinition, ...]:
    """The tool block of one request: all tools, or only the final ones once the budget is spent."""
    return tuple(d for d in definitions() if context_allowed or d.name in FINAL_TOOLS)


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
