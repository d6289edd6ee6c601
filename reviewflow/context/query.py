"""Querying the index of one tree: where a name is defined, where a definition is used.

References are ranked: confirmed before likely before unlinked (a bare name match), and within
each: the same file, the same package (directory), tests, the rest; then by path and line.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from reviewflow.context.records import Definition, FileIndex, Import, IndexStats, Reference
from reviewflow.context.resolve import Mode, import_modes, link, own_names
from reviewflow.git.runner import run_git

_TEST_PATH = re.compile(
    r"(^|/)(tests?|spec|specs|__tests__|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$|Tests?\.[a-z]+$"
)
_CONFIDENCE = {"confirmed": 0, "likely": 1, None: 2}
# Kinds a name is looked up as when several share it (a C prototype and its definition).
_KIND_ORDER = {"prototype": 1, "macro": 2}


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


@dataclass(frozen=True)
class DefinitionHit:
    path: str
    definition: Definition


@dataclass(frozen=True)
class ReferenceHit:
    """A use of a name, where it is and the definition it sits in (None at file level)."""

    path: str
    reference: Reference
    scope: Definition | None
    link: str | None
    """`confirmed`, `likely`, or None for a bare name match."""


@dataclass
class CodeIndex:
    """The records of every source file of one tree, by path."""

    repo: Path
    files: dict[str, FileIndex]
    blobs: dict[str, str]
    stats: IndexStats
    _lines: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _modes: dict[tuple[str, str], list[tuple[Import, Mode]]] = field(
        default_factory=dict, repr=False
    )
    _own: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    @cached_property
    def _definitions(self) -> dict[str, list[tuple[str, int]]]:
        by_name: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for path, record in self.files.items():
            for i, definition in enumerate(record.definitions):
                by_name[definition.name].append((path, i))
        return by_name

    @cached_property
    def _references(self) -> dict[str, list[tuple[str, int]]]:
        by_name: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for path, record in self.files.items():
            for i, reference in enumerate(record.references):
                by_name[reference.name].append((path, i))
        return by_name

    @cached_property
    def _aliases(self) -> dict[str, list[tuple[str, str]]]:
        """Imported name -> (path, local name) where a file imports it under another name."""
        by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for path, record in self.files.items():
            for imp in record.imports:
                name = imp.name.rpartition(".")[2]
                if name and imp.local and imp.local != name:
                    by_name[name].append((path, imp.local))
        return by_name

    def definitions(self, name: str, from_path: str | None = None) -> list[DefinitionHit]:
        """Where `name` is defined; seen from `from_path`, the ones it can reach come first:
        its own file, the files it imports, its package, then the rest."""
        hits = [
            DefinitionHit(path, self.files[path].definitions[i])
            for path, i in self._definitions.get(name, ())
        ]
        if from_path is None or from_path not in self.files:
            return sorted(hits, key=_definition_key)
        return sorted(hits, key=lambda hit: (self._reach(from_path, hit), *_definition_key(hit)))

    def references(
        self, name: str, defined_in: str | None = None, *, linked_only: bool = False
    ) -> list[ReferenceHit]:
        """Uses of `name`, ranked; with `defined_in`, tied to its definition in that file (the
        file need not define it any more: a deleted symbol's uses are still found)."""
        target = self._target(name, defined_in)
        unique = self._unique(name)
        hits: list[ReferenceHit] = []
        for path, i in self._uses(name):
            record = self.files[path]
            reference = record.references[i]
            found = None
            if target is not None:
                def_path, definition = target
                found = self._link(path, reference, def_path, definition, unique)
            if linked_only and found is None:
                continue
            hits.append(ReferenceHit(path, reference, record.scope_of(reference), found))
        origin = defined_in or ""
        return sorted(hits, key=lambda hit: _reference_key(hit, origin))

    def _uses(self, name: str) -> list[tuple[str, int]]:
        """The references named `name`, and those to a local alias of an imported `name`."""
        uses = list(self._references.get(name, ()))
        for path, alias in self._aliases.get(name, ()):
            uses.extend((p, i) for p, i in self._references.get(alias, ()) if p == path)
        return uses

    def cache_lines(self, paths: Iterable[str]) -> None:
        """Read the text of `paths` now, while `repo` still holds their blobs."""
        for path in paths:
            self.line(path, 1)

    def line(self, path: str, number: int) -> str:
        """Line `number` (1-based) of `path` in the indexed tree, stripped; empty if none."""
        if path not in self._lines:
            blob = self.blobs.get(path)
            text = run_git(self.repo, ["cat-file", "blob", blob]) if blob else b""
            self._lines[path] = text.decode("utf-8", "replace").splitlines()
        lines = self._lines[path]
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""

    def _link(
        self, path: str, reference: Reference, def_path: str, definition: Definition, unique: bool
    ) -> str | None:
        """`resolve.link`, with each file's imports and names worked out once."""
        record = self.files[path]
        if (path, def_path) not in self._modes:
            self._modes[path, def_path] = import_modes(path, record, def_path)
        if path not in self._own:
            self._own[path] = own_names(record)
        return link(
            path,
            record,
            reference,
            def_path,
            definition,
            unique=unique,
            modes=self._modes[path, def_path],
            own=self._own[path],
        )

    def _unique(self, name: str) -> bool:
        """At most one file defines `name` visibly (a C prototype declares, not defines)."""
        paths = set()
        for path, i in self._definitions.get(name, ()):
            definition = self.files[path].definitions[i]
            if not definition.local and definition.kind != "prototype":
                paths.add(path)
        return len(paths) <= 1

    def _target(self, name: str, defined_in: str | None) -> tuple[str, Definition] | None:
        if defined_in is None:
            hits = self.definitions(name)
            return (hits[0].path, hits[0].definition) if len(hits) == 1 else None
        record = self.files.get(defined_in)
        own = [d for d in record.definitions if d.name == name] if record else []
        if own:
            return defined_in, sorted(own, key=lambda d: _KIND_ORDER.get(d.kind, 0))[0]
        # Not (or no longer) defined there: link it as a plain function of that file.
        return defined_in, Definition(name, name, "function", 0, 0, "")

    def resolve(self, from_path: str, reference: Reference) -> DefinitionHit | None:
        """The definition a use in `from_path` is tied to (confirmed first), if any."""
        if from_path not in self.files:
            return None
        hits = self.definitions(reference.name)
        reach = {id(hit): self._reach(from_path, hit, reference) for hit in hits}
        ranked = sorted(hits, key=lambda hit: (reach[id(hit)], *_definition_key(hit)))
        return ranked[0] if ranked and reach[id(ranked[0])] < 3 else None

    def _reach(self, from_path: str, hit: DefinitionHit, probe: Reference | None = None) -> int:
        if hit.path == from_path:
            return 0
        probe = probe or Reference(hit.definition.name, "call", 0)
        unique = self._unique(hit.definition.name)
        found = self._link(from_path, probe, hit.path, hit.definition, unique)
        return 1 if found == "confirmed" else 2 if found == "likely" else 3


def _definition_key(hit: DefinitionHit) -> tuple[int, bool, str, int]:
    definition = hit.definition
    return (_KIND_ORDER.get(definition.kind, 0), is_test_path(hit.path), hit.path, definition.line)


def _reference_key(hit: ReferenceHit, origin: str) -> tuple[int, int, str, int]:
    return (_CONFIDENCE[hit.link], _locality(hit.path, origin), hit.path, hit.reference.line)


def _locality(path: str, origin: str) -> int:
    """0 the same file, 1 the same package, 2 tests, 3 the rest."""
    if path == origin:
        return 0
    if origin and posixpath.dirname(path) == posixpath.dirname(origin):
        return 1
    return 2 if is_test_path(path) else 3
