"""Which tree-sitter grammar parses which file, and the query that reads it.

A language is a grammar from a prebuilt wheel (nothing is downloaded at run time) and one
`queries/<name>.scm` file of this package. The key of a language changes with the grammar's
version, the query's text and the record version, so an index record made by another parser
is never reused.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import PurePosixPath

import tree_sitter

from reviewflow.context.records import RECORD_VERSION

# name: (module, function returning the grammar, distribution)
_GRAMMARS: dict[str, tuple[str, str, str]] = {
    "bash": ("tree_sitter_bash", "language", "tree-sitter-bash"),
    "c": ("tree_sitter_c", "language", "tree-sitter-c"),
    "cpp": ("tree_sitter_cpp", "language", "tree-sitter-cpp"),
    "csharp": ("tree_sitter_c_sharp", "language", "tree-sitter-c-sharp"),
    "go": ("tree_sitter_go", "language", "tree-sitter-go"),
    "java": ("tree_sitter_java", "language", "tree-sitter-java"),
    "javascript": ("tree_sitter_javascript", "language", "tree-sitter-javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "tree-sitter-typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "tree-sitter-typescript"),
    "kotlin": ("tree_sitter_kotlin", "language", "tree-sitter-kotlin"),
    "php": ("tree_sitter_php", "language_php", "tree-sitter-php"),
    "python": ("tree_sitter_python", "language", "tree-sitter-python"),
    "ruby": ("tree_sitter_ruby", "language", "tree-sitter-ruby"),
    "rust": ("tree_sitter_rust", "language", "tree-sitter-rust"),
    "scala": ("tree_sitter_scala", "language", "tree-sitter-scala"),
    "swift": ("tree_sitter_swift", "language", "tree-sitter-swift"),
}
# The query file of a grammar that shares another's (TSX reads as TypeScript).
_QUERY_OF = {"tsx": "typescript"}

_EXTENSIONS: dict[str, str] = {
    ".sh": "bash",
    ".bash": "bash",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".go": "go",
    ".java": "java",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".php": "php",
    ".py": "python",
    ".pyi": "python",
    ".rb": "ruby",
    ".rs": "rust",
    ".scala": "scala",
    ".sc": "scala",
    ".swift": "swift",
}


@dataclass(frozen=True)
class Language:
    """A grammar, its compiled query and the key index records made with them carry."""

    name: str
    grammar: tree_sitter.Language
    query: tree_sitter.Query
    key: str

    def parser(self) -> tree_sitter.Parser:
        return tree_sitter.Parser(self.grammar)


def language_name(path: str) -> str | None:
    """The language a path is indexed as, or None for a file the index does not read."""
    return _EXTENSIONS.get(PurePosixPath(path).suffix.lower())


def query_text(name: str) -> str:
    return (
        resources.files("reviewflow.context")
        .joinpath("queries")
        .joinpath(f"{_QUERY_OF.get(name, name)}.scm")
        .read_text(encoding="utf-8")
    )


@cache
def load(name: str) -> Language:
    """The grammar and compiled query of language `name` (loaded once per process)."""
    module, function, distribution = _GRAMMARS[name]
    grammar = tree_sitter.Language(getattr(importlib.import_module(module), function)())
    text = query_text(name)
    version = f"{metadata.version('tree-sitter')}/{metadata.version(distribution)}"
    seed = f"{name}\0{version}\0{RECORD_VERSION}\0{text}"
    digest = hashlib.sha256(seed.encode()).hexdigest()[:12]
    return Language(name, grammar, tree_sitter.Query(grammar, text), f"{name}:{digest}")


def languages() -> tuple[str, ...]:
    """Every language the index reads."""
    return tuple(_GRAMMARS)
