"""The layers of the code base hold: imports run one way and never in a cycle, between modules
or between packages.

cli -> local -> flows -> tasks -> reviewflow (docs/architecture.md, Layers). Inside the domain
every package and module has a rank (DOMAIN, highest first), and a new one fails the test until
it is given one. Every import counts: at module level, inside a function, under
`if TYPE_CHECKING:` and in a program's `if __name__ == "__main__":` block alike; a relative
import (`from . import x`; ruff's TID252 forbids them too) as the absolute one it stands for;
and an import made by name: `import_module("a.b")` with a literal argument, and a string that
names one of our modules (`"a.b"` or `"a.b:attr"`, as a registry names an adapter), as an
import of that module; only a program's bare name (`"a.b"` run as `python -m a.b`) is not one:
it starts a process, which imports what it needs itself. The checks read a `Codebase`, so the
last tests run them on small package trees of their own and see them catch what they must.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "tasks", "reviewflow")
# Highest first: a layer may import its own and any lower one, never a higher one.
# (`flows.review` is the `python -m flows.review` program: it hands over to the CLI.)
LAYERS = (
    ("flows.cli", "flows.review"),
    ("flows.local",),
    ("flows",),
    ("tasks",),
    ("reviewflow",),
)
DOMAIN = (
    ("reviewflow.entry", "reviewflow.publish"),  # entry: a client's front half and end
    ("reviewflow.report",),
    ("reviewflow.cost",),
    ("reviewflow.findings",),
    ("reviewflow.review",),
    ("reviewflow.sast", "reviewflow.context"),
    ("reviewflow.select", "reviewflow.providers"),
    ("reviewflow.request",),
    ("reviewflow.pullrequest", "reviewflow.rules", "reviewflow.config"),
    ("reviewflow.git",),
    (
        "reviewflow.globs",
        "reviewflow.anchors",
        "reviewflow.prompts",
        "reviewflow.ci",
        "reviewflow.platforms",
    ),
    (
        "reviewflow.cancel",
        "reviewflow.home",
        "reviewflow.models",
        "reviewflow.fsutil",
        "reviewflow.plugins",
    ),
    ("reviewflow.errors", "reviewflow.version"),
    ("reviewflow",),  # the package itself: its version
)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# A dotted module path, with an attribute after a colon or not: `a.b`, `a.b:c`, `a:c`.
_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_][\w.]*)?")


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _is_main_block(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`"""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _import_module_argument(node: ast.AST) -> str | None:
    """The literal module name of an `import_module("a.b")` / `importlib.import_module(...)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if name == "import_module" and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


class Codebase:
    """The Python packages `packages` under `root`: their modules and what each one imports."""

    def __init__(self, root: Path, packages: tuple[str, ...]) -> None:
        self.root, self.packages = root, packages
        self._imports: dict[tuple[str, bool], frozenset[str]] = {}

    @cached_property
    def modules(self) -> dict[str, Path]:
        """Every module of the packages, by dotted name."""
        found = {}
        for package in self.packages:
            for path in sorted((self.root / package).rglob("*.py")):
                parts = path.relative_to(self.root).with_suffix("").parts
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        return found

    def _source(self, module: str, node: ast.ImportFrom) -> str:
        """What a `from` import in `module` imports from; a relative one made absolute."""
        if not node.level:
            return node.module or ""
        package = module.split(".")
        if self.modules[module].name != "__init__.py":
            package.pop()
        if node.level - 1 >= len(package):
            raise ValueError(f"{module}: a relative import beyond the top-level package")
        base = package[: len(package) - node.level + 1]
        return ".".join([*base, node.module] if node.module else base)

    @cached_property
    def programs(self) -> frozenset[str]:
        """Our programs: the modules with an `if __name__ == "__main__":` block."""
        return frozenset(
            module
            for module, path in self.modules.items()
            if any(_is_main_block(node) for node in ast.parse(path.read_bytes()).body)
        )

    def _named_module(self, text: str) -> str | None:
        """The module of ours a string names (`a.b` or `a.b:attr`), if it names one. A bare
        program's name (`"a.b"` of a program) names a process to start (`python -m a.b`), not
        an import: that process imports its own modules, this one none."""
        if ("." not in text and ":" not in text) or not _MODULE_PATH.fullmatch(text):
            return None
        module, colon, _ = text.partition(":")
        if module not in self.modules or (not colon and module in self.programs):
            return None
        return module

    def imported_names(self, module: str, tree: ast.AST, *, lazy: bool = True) -> Iterator[str]:
        """Dotted names that `module`, parsed as `tree`, imports; with `lazy` false, only those
        imported when the module itself is (none inside a function or an `if TYPE_CHECKING:`
        block, and no string: a name is imported only when something loads it). `from a import
        b` names `a.b` when that is a module of ours, else `a` (a package's `__init__` may
        import its own submodules: no cycle)."""
        stack = [tree]
        while stack:
            node = stack.pop()
            if not lazy and (isinstance(node, _FUNCTIONS) or _is_type_checking_block(node)):
                continue
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = self._source(module, node)
                named = [f"{source}.{alias.name}" for alias in node.names]
                submodules = [name for name in named if name in self.modules]
                yield from submodules
                if len(submodules) < len(named):
                    yield source
            elif (by_name := _import_module_argument(node)) is not None:
                yield by_name
            elif lazy and isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield from filter(None, [self._named_module(node.value)])
            stack.extend(ast.iter_child_nodes(node))

    def imports(self, module: str, *, lazy: bool = True) -> frozenset[str]:
        """The outside packages and the modules of ours that `module` imports."""
        if (module, lazy) not in self._imports:
            tree = ast.parse(self.modules[module].read_text(encoding="utf-8"))
            found = set()
            for name in self.imported_names(module, tree, lazy=lazy):
                top = name.split(".")[0]
                if top not in self.packages:
                    found.add(top)
                elif name in self.modules:
                    found.add(name)
            self._imports[module, lazy] = frozenset(found)
        return self._imports[module, lazy]

    def module_graph(self) -> dict[str, set[str]]:
        """Which of our modules each module imports (a module naming itself, as the registry
        names its own entry point group, imports nothing)."""
        return {m: {n for n in self.imports(m) if n in self.modules} - {m} for m in self.modules}

    def package_graph(self, package: Callable[[str], str]) -> dict[str, set[str]]:
        """Which packages each package's modules import (`package` names a module's)."""
        graph: dict[str, set[str]] = {}
        for module, theirs in self.module_graph().items():
            mine = package(module)
            graph.setdefault(mine, set()).update({package(n) for n in theirs} - {mine})
        return graph


CODE = Codebase(ROOT, PACKAGES)


def _layer(module: str, layers: tuple[tuple[str, ...], ...]) -> int | None:
    """The rank of the most specific entry naming `module` or a package it is in."""
    named = [
        (len(p), rank)
        for rank, prefixes in enumerate(layers)
        for p in prefixes
        if module == p or module.startswith(p + ".")
    ]
    return max(named)[1] if named else None


def _package(module: str) -> str:
    """The unit the package cycle test counts: `reviewflow.report`, `flows.cli`, `tasks`."""
    parts = module.split(".")
    if parts[0] == "tasks" or len(parts) == 1:
        return parts[0]
    if parts[0] == "flows" and parts[1] not in ("cli", "local", "review"):
        return "flows"
    return ".".join(parts[:2])


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle a depth-first walk of `graph` meets, as `a -> b -> a`."""
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for name in sorted(graph.get(node, ())):
            if state.get(name) == 1:
                cycles.append(" -> ".join([*path[path.index(name) :], name]))
            elif name not in state:
                visit(name, [*path, name])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def import_cycles(code: Codebase) -> list[str]:
    """Every cycle between the modules of `code`, then between its packages."""
    return _cycles(code.module_graph()) + _cycles(code.package_graph(_package))


def _upward(layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a module into a layer above its own."""
    wrong = []
    for module in CODE.modules:
        mine = _layer(module, layers)
        for name in CODE.imports(module):
            theirs = _layer(name, layers)
            if mine is not None and theirs is not None and theirs < mine:
                wrong.append(f"{module} imports {name}")
    return sorted(wrong)


def test_the_domain_never_imports_prefect() -> None:
    modules = CODE.modules
    offenders = [m for m in modules if m.startswith("reviewflow") and "prefect" in CODE.imports(m)]
    assert offenders == []


@pytest.mark.parametrize(
    "module",
    ["flows.cli.entry", "flows.cli.main", "flows.local.process", "flows.local.warm.client"],
)
def test_what_runs_before_a_review_starts_does_not_import_prefect(module: str) -> None:
    """The hand-over and every non-review command stay instant: no Prefect on their path."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        eager = CODE.imports(current, lazy=False)
        assert "prefect" not in eager, f"{current}, imported by {module}"
        todo.extend(name for name in eager if name in CODE.modules)


def test_imports_run_one_way_between_the_top_layers() -> None:
    assert _upward(LAYERS) == []


def test_imports_run_one_way_between_the_stages_of_the_domain() -> None:
    assert _upward(DOMAIN) == []


def test_every_module_of_the_domain_has_a_rank() -> None:
    unranked = [
        m for m in CODE.modules if m.startswith("reviewflow.") and _layer(m, DOMAIN[:-1]) is None
    ]
    assert unranked == []


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(CODE.module_graph()) == []


def test_no_import_cycle_between_packages() -> None:
    assert _cycles(CODE.package_graph(_package)) == []


def test_the_checks_see_a_violation() -> None:
    """The walker finds function-level, type-checking and main-block imports; the cycle
    finder finds a cycle of two packages."""
    tree = ast.parse(
        "def f():\n    import prefect\n"
        "if TYPE_CHECKING:\n    import dask\n"
        "if __name__ == '__main__':\n    from flows.cli.entry import entry\n"
    )
    names = set(CODE.imported_names("reviewflow.version", tree))
    assert names == {"prefect", "dask", "flows.cli.entry"}
    assert _cycles({"a": {"b"}, "b": {"a"}}) == ["a -> b -> a"]
    assert _layer("reviewflow.report.gate", DOMAIN) == 1 and _layer("reviewflow", DOMAIN) == 13


def _tree(root: Path, files: dict[str, str]) -> Codebase:
    """A package tree under `root`, `files` by path (`pkg/a.py`), as a `Codebase`."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return Codebase(root, tuple(sorted({name.split("/")[0] for name in files})))


def _between(cycles: list[str], *members: str) -> bool:
    """Whether one of `cycles` runs through exactly `members`."""
    return any(set(cycle.split(" -> ")) == set(members) for cycle in cycles)


_ACYCLIC = {
    "pkg/__init__.py": "from pkg.low import base\n",
    "pkg/low/__init__.py": "",
    "pkg/low/base.py": "VALUE = 1\n",
    "pkg/high/__init__.py": "",
    "pkg/high/user.py": "from pkg.low.base import VALUE\n",
}


def test_a_tree_without_a_cycle_passes(tmp_path: Path) -> None:
    code = _tree(tmp_path, _ACYCLIC)
    assert code.imports("pkg.high.user") == {"pkg.low.base"}
    assert import_cycles(code) == []


@pytest.mark.parametrize(
    "statement",
    ["from ..high import user", "from ..high.user import NAME", "from .. import high"],
)
def test_a_relative_import_cycle_is_caught(tmp_path: Path, statement: str) -> None:
    files = {
        **_ACYCLIC,
        "pkg/low/base.py": f"def f():\n    {statement}\n",
        "pkg/high/user.py": "from pkg.low import base\nNAME = 1\n",
    }
    assert _between(import_cycles(_tree(tmp_path, files)), "pkg.low", "pkg.high")


def test_a_relative_import_inside_a_package_resolves_to_its_sibling(tmp_path: Path) -> None:
    code = _tree(
        tmp_path,
        {
            **_ACYCLIC,
            "pkg/low/__init__.py": "from . import base\nfrom .base import VALUE\n",
            "pkg/low/other.py": "from .base import VALUE\nfrom . import base as b\n",
        },
    )
    assert code.imports("pkg.low") == {"pkg.low.base"}
    assert code.imports("pkg.low.other") == {"pkg.low.base"}


@pytest.mark.parametrize(
    "reference",
    [
        'ADAPTER = "pkg.high.user:create"',
        'NAMES = ("pkg.high.user",)',
        'def load():\n    return importlib.import_module("pkg.high.user")',
    ],
)
def test_a_string_import_cycle_is_caught(tmp_path: Path, reference: str) -> None:
    """A registry naming an adapter up the stack is a cycle like an import statement."""
    code = _tree(tmp_path, {**_ACYCLIC, "pkg/low/base.py": f"import importlib\n{reference}\n"})
    assert code.imports("pkg.low.base") >= {"pkg.high.user"}
    cycles = import_cycles(code)
    assert _between(cycles, "pkg.low.base", "pkg.high.user")
    assert _between(cycles, "pkg.low", "pkg.high")


def test_strings_that_name_no_module_of_ours_are_no_import(tmp_path: Path) -> None:
    text = '"""pkg.high.user is named in prose."""\nA = ("pkg", "pkg.nothing", "os.path", "x:y")\n'
    code = _tree(tmp_path, {**_ACYCLIC, "pkg/low/base.py": text})
    assert code.imports("pkg.low.base") == frozenset()
    assert code.imports("pkg.low.base", lazy=False) == frozenset()


def test_a_programs_name_starts_a_process_and_imports_nothing(tmp_path: Path) -> None:
    """The local server's launcher names its program, which reads the launcher's state file:
    two processes, no import cycle. The same name with an attribute is an import."""
    program = 'from pkg.low import base\nif __name__ == "__main__":\n    base.main()\n'
    launcher = 'ARGS = ("-m", "pkg.high.user")\n'
    code = _tree(tmp_path, {**_ACYCLIC, "pkg/high/user.py": program, "pkg/low/base.py": launcher})
    assert code.programs == {"pkg.high.user"}
    assert code.imports("pkg.low.base") == frozenset()
    assert import_cycles(code) == []

    (tmp_path / "pkg/low/base.py").write_text('MAIN = "pkg.high.user:main"\n')
    code = Codebase(tmp_path, ("pkg",))
    assert _between(import_cycles(code), "pkg.low.base", "pkg.high.user")
