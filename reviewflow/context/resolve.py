"""Whether a use of a name in one file refers to a definition in another, per language.

A bare name match is not a reference. A use is `confirmed` when the language's rules tie it
to the definition: the same file, an import that names the definition's module (or the name
itself), the same package (Go, Java, Kotlin, Scala, C#), a C function defined once in the
tree. It is `likely` for a member call on an object whose type the index cannot know
(`obj.save()`) in a file that imports or shares the definition's module. Otherwise it is not
linked (`None`), and ranks last.
"""

from __future__ import annotations

import posixpath
from typing import Literal

from reviewflow.context.records import Definition, FileIndex, Import, Reference

Link = Literal["confirmed", "likely"]

SELF = frozenset({"self", "cls", "this", "Self", "super", "@", "$this", "static", "parent"})
_PACKAGE_LANGUAGES = frozenset({"go", "java", "kotlin", "scala", "csharp"})
_GLOBAL_LANGUAGES = frozenset({"c", "cpp", "ruby", "bash", "swift", "php"})
_NOT_SHADOWING = frozenset({"method", "prototype"})
_SOURCE_EXT = (".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".rs", ".rb", ".php")


def link(
    ref_path: str,
    ref_file: FileIndex,
    ref: Reference,
    def_path: str,
    definition: Definition,
    *,
    unique: bool,
) -> Link | None:
    """How `ref` (in `ref_path`) is tied to `definition` (in `def_path`), if at all.

    `unique`: no other file of the tree defines a visible symbol of that name.
    """
    receiver = ref.receiver
    if ref_path == def_path:
        if not receiver or receiver in SELF or receiver == _container(definition):
            return "confirmed"
        return "likely"
    if definition.local:
        return None
    if not receiver and any(
        d.name == ref.name and d.kind not in _NOT_SHADOWING for d in ref_file.definitions
    ):
        return None  # the file defines that name itself
    language = ref_file.language
    imported = [imp for imp in ref_file.imports if _imports(language, imp, ref_path, def_path)]
    container = _container(definition)
    for imp in imported:
        if not receiver and imp.local == ref.name:
            return "confirmed"
        if (
            receiver
            and receiver.split(".")[-1] == imp.local
            and (not imp.name or imp.name == container or imp.name.endswith("." + container))
        ):
            return "confirmed"
    if receiver and container and receiver.split(".")[-1] == container:
        return "confirmed" if imported or _same_package(ref_path, def_path) else "likely"
    same_package = language in _PACKAGE_LANGUAGES and _same_package(ref_path, def_path)
    if not receiver:
        if same_package or (language in _GLOBAL_LANGUAGES and unique):
            return "confirmed"
        if language in ("c", "cpp") and imported:
            return "confirmed"
        if language in _GLOBAL_LANGUAGES and definition.kind != "method":
            return "likely"
        return None
    if language == "go" and any(imp.local == receiver for imp in imported):
        return "confirmed"
    if receiver in SELF:
        return None  # a method of the calling file's own class
    if imported or same_package or (unique and language in _GLOBAL_LANGUAGES):
        return "likely"
    return None


def _container(definition: Definition) -> str:
    head, _, _ = definition.qualname.rpartition(".")
    return head.rpartition(".")[2]


def _same_package(a: str, b: str) -> bool:
    return posixpath.dirname(a) == posixpath.dirname(b)


def _stem(path: str) -> str:
    for ext in _SOURCE_EXT:
        if path.endswith(ext):
            path = path[: -len(ext)]
            break
    return path.removesuffix("/__init__").removesuffix("/index").removesuffix("/mod")


def _imports(language: str, imp: Import, ref_path: str, def_path: str) -> bool:
    """Whether the import `imp` in `ref_path` names the module defined by `def_path`."""
    module = imp.module
    if not module:
        return False
    target = _stem(def_path)
    if language in ("c", "cpp"):
        header = posixpath.splitext(posixpath.basename(module))[0]
        return def_path.endswith(module) or (
            header == posixpath.splitext(posixpath.basename(def_path))[0]
        )
    if language == "python":
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = posixpath.dirname(ref_path)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            rest = module.lstrip(".").replace(".", "/")
            module_path = posixpath.join(base, rest) if rest else base
            candidates = [module_path, posixpath.join(module_path, imp.name)]
            return target in candidates
        dotted = module.replace(".", "/")
        names = [dotted, f"{dotted}/{imp.name}"] if imp.name else [dotted]
        return any(target == n or target.endswith("/" + n) for n in names)
    if language in ("javascript", "typescript", "tsx"):
        if module.startswith("."):
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(ref_path), module))
            return _stem(joined) == target
        bare = module.lstrip("@~/").split("/", 1)[-1] if module[:1] in "@~" else module
        return target.endswith("/" + bare) or target == bare
    if language == "go":
        directory = posixpath.dirname(def_path)
        return bool(directory) and (module == directory or module.endswith("/" + directory))
    if language == "rust":
        parts = [p for p in module.split("::") if p not in ("crate", "self", "super")]
        path = "/".join(parts)
        return bool(path) and (target.endswith("/" + path) or target == path)
    separator = "\\" if language == "php" else "."
    parts = [p for p in module.replace("/", separator).split(separator) if p]
    if imp.name:
        parts.append(imp.name)
    stem = posixpath.splitext(def_path)[0]
    if language in ("ruby", "bash"):
        return stem.endswith(posixpath.splitext(module)[0])
    if language == "php":
        return stem.endswith("/".join(parts[-2:]))
    # Java, Kotlin, Scala, C#, Swift: `a.b.C` names the file a/b/C.* or a class of package a.b.
    package = "/".join(parts[:-1])
    return stem.endswith("/".join(parts)) or (
        bool(package) and posixpath.dirname(def_path).endswith(package)
    )
