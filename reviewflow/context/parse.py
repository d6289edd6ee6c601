"""Reading one file's text into a `FileIndex` with tree-sitter and the language's query.

The query (`queries/<language>.scm`) names what to read; this module only turns its captures
into records:

- `@definition.<kind>` on a definition, with `@name` its name and optionally `@receiver` the
  type a method is declared on (a Go receiver);
- `@reference.<kind>` (call, type, attribute, name) with `@name` the name used and optionally
  `@receiver` what it was reached through;
- `@import` with `@import.module`, and optionally `@import.name` and `@import.alias`.
"""

from __future__ import annotations

import re
from bisect import bisect_right

import tree_sitter

from reviewflow.context.languages import Language, load
from reviewflow.context.records import Definition, FileIndex, Import, Reference

MAX_SIGNATURE = 200
MAX_RECEIVER = 60
# When one name node is captured by several patterns, the first kind here wins.
_REF_PRIORITY = {"import": -1, "call": 0, "type": 1, "attribute": 2, "name": 3}
_CONTAINERS = frozenset({"class", "struct", "interface", "trait", "enum", "object"})
# Nodes a definition sits in that its comment precedes (`export function f`, `@deco def f`).
_WRAPPERS = frozenset({"export_statement", "decorated_definition", "template_declaration"})
_SPACES = re.compile(r"\s+")
_COMMENT_MARK = re.compile(r"^\s*(?:/\*+!?|\*+/?|//[/!]*|#+|--|\"\"\"|''')\s*")
_QUOTES = "\"'`<>"
_STRING_QUOTES = re.compile(r"^[rRbBuUfF]*(\"\"\"|'''|\"|')|(\"\"\"|'''|\"|')$")


def parse_source(source: bytes, language: str) -> FileIndex:
    """Definitions, references and imports of `source` read as `language`."""
    lang = load(language)
    tree = lang.parser().parse(source)
    matches = tree_sitter.QueryCursor(lang.query).matches(tree.root_node)
    definitions: list[tuple[tree_sitter.Node, str, str, str]] = []  # node, name, kind, receiver
    seen_names: set[int] = set()
    references: dict[int, tuple[tree_sitter.Node, str, str]] = {}  # by name node start
    imports: list[Import] = []
    for _, captures in matches:
        name_nodes = captures.get("name")
        receiver = captures.get("receiver")
        if "import" in captures:
            imports.extend(_import(captures))
            for node in captures.get("import.name", ()):
                references[node.start_byte] = (node, "import", "")
            continue
        if not name_nodes:
            continue
        name_node = name_nodes[0]
        for capture, nodes in captures.items():
            kind = capture.partition(".")[2]
            if capture.startswith("definition.") and name_node.start_byte not in seen_names:
                seen_names.add(name_node.start_byte)
                recv = _text(receiver[0]) if receiver else ""
                definitions.append((nodes[0], _text(name_node), kind, recv))
            elif capture.startswith("reference."):
                old = references.get(name_node.start_byte)
                if old is None or _REF_PRIORITY.get(kind, 9) < _REF_PRIORITY.get(old[1], 9):
                    recv = _text(receiver[0])[:MAX_RECEIVER] if receiver else ""
                    references[name_node.start_byte] = (name_node, kind, _SPACES.sub("", recv))
    return _records(lang, source, definitions, seen_names, references, imports)


def _records(
    lang: Language,
    source: bytes,
    found: list[tuple[tree_sitter.Node, str, str, str]],
    def_names: set[int],
    refs: dict[int, tuple[tree_sitter.Node, str, str]],
    imports: list[Import],
) -> FileIndex:
    found.sort(key=lambda d: (d[0].start_byte, -d[0].end_byte))
    starts = [node.start_byte for node, *_ in found]
    ends = [node.end_byte for node, *_ in found]
    parents: list[int] = []
    definitions: list[Definition] = []
    for i, (node, name, kind, receiver) in enumerate(found):
        parent = _enclosing(ends, starts, parents, node.start_byte, i)
        parents.append(parent)
        outer = definitions[parent] if parent >= 0 else None
        if outer is not None and kind == "function" and outer.kind in _CONTAINERS:
            kind = "method"
        prefix = receiver or (outer.qualname if outer is not None else "")
        definitions.append(
            Definition(
                name=name,
                qualname=f"{prefix}.{name}" if prefix else name,
                kind=kind,
                line=node.start_point[0] + 1,
                end_line=node.end_point[0] + 1,
                signature=_signature(node),
                doc=_doc(node, lang.name),
                local=_is_local(node, lang.name),
            )
        )
    references = [
        Reference(
            name=_text(node),
            kind=kind,
            line=node.start_point[0] + 1,
            scope=_enclosing(ends, starts, parents, node.start_byte, len(found)),
            receiver=receiver,
        )
        for start, (node, kind, receiver) in sorted(refs.items())
        if start not in def_names
    ]
    return FileIndex(lang.name, tuple(definitions), tuple(references), tuple(imports))


def _enclosing(ends: list[int], starts: list[int], parents: list[int], at: int, before: int) -> int:
    """The innermost definition among the first `before` that contains byte `at`, or -1.

    Definitions nest, so when the last one starting before `at` does not contain it, only
    its ancestors can: walk up its parents.
    """
    i = min(bisect_right(starts, at), before) - 1
    while i >= 0 and not at < ends[i]:
        i = parents[i]
    return i


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _import(captures: dict[str, list[tree_sitter.Node]]) -> list[Import]:
    if "import.statement" in captures:
        return _dotted_import(_text(captures["import.statement"][0]))
    module = (
        _text(captures["import.module"][0]).strip(_QUOTES) if "import.module" in captures else ""
    )
    names = [_text(n) for n in captures.get("import.name", [])]
    alias = _text(captures["import.alias"][0]) if "import.alias" in captures else ""
    if not names:
        local = alias or re.split(r"[./:\\]+", module.rstrip("./:\\"))[-1]
        return [Import(local, module, "")] if module else []
    return [Import(alias or name.split(".")[-1], module, name) for name in names]


def _dotted_import(statement: str) -> list[Import]:
    """`import a.b.C`, `import a.b.{C, D => E}`, `import a.b._` (Scala) as imports."""
    body = _SPACES.sub("", statement.removeprefix("import"))
    path, _, selectors = body.partition("{")
    if not selectors:
        module, _, name = path.rpartition(".")
        return [] if not module else [Import("" if name in "_*" else name, module, name)]
    out = []
    for selector in selectors.rstrip("}").split(","):
        name, _, alias = selector.replace("=>", "->").partition("->")
        if name and name not in "_*":
            out.append(Import(alias or name, path.rstrip("."), name))
    return out


def _signature(node: tree_sitter.Node) -> str:
    """The definition's text up to its body, on one line."""
    body = node.child_by_field_name("body")
    source = node.text or b""
    if body is not None and body.start_byte > node.start_byte:
        head = source[: body.start_byte - node.start_byte]
    else:
        head = source.split(b"\n", 1)[0]
    text = _SPACES.sub(" ", head.decode("utf-8", "replace")).strip().rstrip("{:=").rstrip()
    return text if len(text) <= MAX_SIGNATURE else text[: MAX_SIGNATURE - 1] + "…"


def _doc(node: tree_sitter.Node, language: str) -> str:
    """The first line of the definition's docstring or of the comment right above it."""
    if language == "python":
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement":
            string = first.named_children[0] if first.named_children else None
            if string is not None and string.type == "string":
                return _first_line(_STRING_QUOTES.sub("", _text(string)))
    while node.parent is not None and node.parent.type in _WRAPPERS:
        node = node.parent
    above = node.prev_named_sibling
    while above is not None and above.type in ("attribute_item", "decorator", "annotation"):
        above = above.prev_named_sibling
    if above is None or "comment" not in above.type:
        return ""
    if above.end_point[0] < node.start_point[0] - 1:
        return ""
    # A block of line comments: go up to its first line.
    while (
        (prev := above.prev_named_sibling) is not None
        and "comment" in prev.type
        and prev.end_point[0] == above.start_point[0] - 1
    ):
        above = prev
    return _first_line(_text(above))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = _COMMENT_MARK.sub("", line).strip().rstrip("*/").strip()
        if line:
            return line[:MAX_SIGNATURE]
    return ""


def _is_local(node: tree_sitter.Node, language: str) -> bool:
    if language not in ("c", "cpp"):
        return False
    return any(
        child.type == "storage_class_specifier" and child.text == b"static"
        for child in node.children
    )
