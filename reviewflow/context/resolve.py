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

from reviewflow.context.languages import language_name
from reviewflow.context.records import Definition, FileIndex, Import, Reference

Link = Literal["confirmed", "likely"]
Mode = Literal["module", "member"]

SELF = frozenset({"self", "cls", "this", "Self", "super", "@", "$this", "static", "parent"})
_PACKAGE_LANGUAGES = frozenset({"go", "java", "kotlin", "scala", "csharp"})
_GLOBAL_LANGUAGES = frozenset({"c", "cpp", "ruby", "bash", "swift", "php"})
_HEADERS = (".h", ".hh", ".hpp", ".hxx")
_FAMILIES = {"cpp": "c", "typescript": "javascript", "tsx": "javascript"}
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
    modes: list[tuple[Import, Mode]] | None = None,
    own: frozenset[str] | None = None,
) -> Link | None:
    """How `ref` (in `ref_path`) is tied to `definition` (in `def_path`), if at all.
    `unique`: no other file defines that name visibly; `modes` (`import_modes`) and `own`
    (`own_names`) when the caller has worked them out."""
    receiver = ref.receiver
    if ref_path == def_path:
        if not receiver or receiver in SELF or receiver == _container(definition):
            return "confirmed"
        # `config.review` is not the file's top-level `review`: only a member can be reached
        # through another object (one whose type the index cannot know).
        return "likely" if _container(definition) else None
    if family(ref_file.language) != family(language_name(def_path) or ""):
        return None  # a Rust `name` is not what a C file calls
    if definition.local and not def_path.endswith(_HEADERS):
        return None  # a C `static` function (in a header, every includer has its own copy)
    if not receiver and ref.name in (own if own is not None else own_names(ref_file)):
        return None  # the file defines that name itself
    language = ref_file.language
    if modes is None:
        modes = import_modes(ref_path, ref_file, def_path)
    imported = [imp for imp, _ in modes]
    container = _container(definition)
    if any(_through(imp, mode, ref, container) for imp, mode in modes):
        return "confirmed"
    if ref.kind == "import":
        named = any(imp.name.rpartition(".")[2] == ref.name for imp in imported)
        return "confirmed" if named else None
    if receiver and container and receiver.split(".")[-1] == container:
        return "confirmed" if imported or _same_package(ref_path, def_path) else "likely"
    same_package = language in _PACKAGE_LANGUAGES and _same_package(ref_path, def_path)
    return _by_scope(language, ref, definition, bool(imported), same_package, unique)


def _by_scope(
    language: str,
    ref: Reference,
    definition: Definition,
    imported: bool,
    same_package: bool,
    unique: bool,
) -> Link | None:
    """The link no import names: through the package, or C's (and Ruby's...) global names."""
    global_names = language in _GLOBAL_LANGUAGES
    if not ref.receiver:
        if same_package or (global_names and unique) or (language in ("c", "cpp") and imported):
            return "confirmed"
        return "likely" if global_names and definition.kind != "method" else None
    if ref.receiver in SELF:
        return None  # a method of the calling file's own class
    if not _container(definition):
        return None  # `config.review` is no top-level `review`: an import would have named it
    return "likely" if imported or same_package or (unique and global_names) else None


def family(language: str) -> str:
    """Languages whose files use each other's definitions share a family (C and C++; JS and TS)."""
    return _FAMILIES.get(language, language)


def own_names(record: FileIndex) -> frozenset[str]:
    """The names a file defines that hide an imported one (not methods, not prototypes)."""
    return frozenset(d.name for d in record.definitions if d.kind not in _NOT_SHADOWING)


def import_modes(ref_path: str, ref_file: FileIndex, def_path: str) -> list[tuple[Import, Mode]]:
    """The imports of `ref_path` that reach `def_path`, each with how (`_imports`)."""
    language = ref_file.language
    return [
        (imp, mode)
        for imp in ref_file.imports
        if (mode := _imports(language, imp, ref_path, def_path))
    ]


def _through(imp: Import, mode: str, ref: Reference, container: str) -> bool:
    """Whether `ref` reaches the definition through `imp`: the imported name itself, a
    member of an imported class, a member of an imported module (or of a class in it)."""
    receiver = ref.receiver
    if mode == "member":
        if not receiver:
            return imp.local == ref.name
        return bool(container) and receiver.split(".")[-1] == imp.local == container
    if not receiver:
        return False
    return receiver == imp.local or (bool(container) and receiver == f"{imp.local}.{container}")


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


def _imports(language: str, imp: Import, ref_path: str, def_path: str) -> Mode | None:
    """How the import `imp` in `ref_path` reaches the file `def_path`: `module` when it names
    that file's module (a namespace, a header, a package), `member` when it names something in
    it (a function, a class), None when it names another file."""
    module = imp.module
    if not module:
        return None
    target = _stem(def_path)
    if language in ("c", "cpp", "ruby", "bash", "go"):
        return "module" if _names_file(language, module, def_path) else None
    if language == "python":
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = posixpath.dirname(ref_path)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            rest = module.lstrip(".").replace(".", "/")
            path = posixpath.join(base, rest) if rest else base
        else:
            path = module.replace(".", "/")
        return _mode(target, path, imp.name, relative=module.startswith("."))
    if language in ("javascript", "typescript", "tsx"):
        if module.startswith("."):
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(ref_path), module))
            path = _stem(joined)
        else:
            path = module.lstrip("@~/").split("/", 1)[-1] if module[:1] in "@~" else module
        return _mode(target, path, "", relative=module.startswith(".")) and (
            "member" if imp.name else "module"
        )
    if language == "rust":
        path = "/".join(p for p in module.split("::") if p not in ("crate", "self", "super"))
        return _mode(target, path, imp.name, relative=False)
    return "member" if _names_class(language, imp, def_path) else None


def _mode(target: str, path: str, name: str, *, relative: bool) -> Mode | None:
    """`member` when the file `target` is module `path` (and `name` is in it), `module` when
    it is `path/name` (`from pkg import module`)."""

    def same(candidate: str) -> bool:
        if relative or not candidate:
            return target == candidate
        return target == candidate or target.endswith("/" + candidate)

    if name and same(f"{path}/{name}" if path else name):
        return "module"
    if same(path):
        return "member" if name else "module"
    return None


def _names_file(language: str, module: str, def_path: str) -> bool:
    if language in ("c", "cpp"):
        header = posixpath.splitext(posixpath.basename(module))[0]
        return def_path.endswith(module) or (
            header == posixpath.splitext(posixpath.basename(def_path))[0]
        )
    if language == "go":
        directory = posixpath.dirname(def_path)
        return bool(directory) and (module == directory or module.endswith("/" + directory))
    return posixpath.splitext(def_path)[0].endswith(posixpath.splitext(module.lstrip("./"))[0])


def _names_class(language: str, imp: Import, def_path: str) -> bool:
    """Java, Kotlin, Scala, C#, Swift, PHP: `a.b.C` names the file a/b/C.* or a class of
    package a.b (PHP: `App\\Models\\User`, the file Models/User.php)."""
    separator = "\\" if language == "php" else "."
    parts = [p for p in imp.module.replace("/", separator).split(separator) if p]
    if imp.name:
        parts.append(imp.name)
    stem = posixpath.splitext(def_path)[0]
    if language == "php":
        return stem.endswith("/".join(parts[-2:]))
    package = "/".join(parts[:-1])
    return stem.endswith("/".join(parts)) or (
        bool(package) and posixpath.dirname(def_path).endswith(package)
    )
