"""The records of the code index: what one source file defines, references and imports.

One `FileIndex` per Git blob (and language), stored compactly as JSON lists by the store.
Definitions, references and imports are named tuples: a large tree holds hundreds of
thousands, and a tuple is the cheapest record to load.
Lines are 1-based. A reference's `scope` is the index of its innermost enclosing definition
in the same file's `definitions`, or -1 at file level.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

RECORD_VERSION = 1
"""Raised whenever what a record holds, or how the parser fills it, changes: records made by
another version are never reused (the version is part of every record's key)."""


class Definition(NamedTuple):
    """A function, method, class, struct, interface... defined in a file."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    signature: str
    doc: str = ""
    local: bool = False
    """Visible only inside its file (a C `static` function)."""


class Reference(NamedTuple):
    """A use of a name: a call, an import, a type, an attribute or a bare name."""

    name: str
    kind: str
    line: int
    scope: int = -1
    receiver: str = ""
    """What the name was reached through: `os.path` in `os.path.join(...)`, else empty."""


class Import(NamedTuple):
    """`module` made visible under `local` (an alias, the imported name or the module's)."""

    local: str
    module: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class FileIndex:
    """What one file of one language defines, references and imports."""

    language: str
    definitions: tuple[Definition, ...] = ()
    references: tuple[Reference, ...] = ()
    imports: tuple[Import, ...] = ()

    def scope_of(self, reference: Reference) -> Definition | None:
        return self.definitions[reference.scope] if reference.scope >= 0 else None

    def to_json(self) -> str:
        """The compact record: lists, not objects."""
        data: dict[str, Any] = {
            "l": self.language,
            "d": [
                [d.name, d.qualname, d.kind, d.line, d.end_line, d.signature, d.doc, int(d.local)]
                for d in self.definitions
            ],
            "r": [[r.name, r.kind, r.line, r.scope, r.receiver] for r in self.references],
            "i": [[i.local, i.module, i.name] for i in self.imports],
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> FileIndex:
        data = json.loads(text)
        return cls(
            data["l"],
            tuple(
                Definition(n, q, k, a, b, s, doc, bool(loc))
                for n, q, k, a, b, s, doc, loc in data["d"]
            ),
            tuple(map(Reference._make, data["r"])),
            tuple(map(Import._make, data["i"])),
        )


class IndexStats(BaseModel):
    """What one build did: the tree's source files, those parsed now (their blob had no
    record), those whose record was reused, and the seconds it took."""

    model_config = ConfigDict(frozen=True)

    files: int
    parsed: int
    reused: int
    seconds: float
