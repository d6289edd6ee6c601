"""The layers of the code base hold: imports run one way and never in a cycle, between modules
or between packages.

cli -> local -> flows -> tasks -> reviewflow (docs/architecture.md, Layers). Inside the domain
every package and module has a rank (DOMAIN, highest first), and a new one fails the test until
it is given one. Every import counts: at module level, inside a function, under
`if TYPE_CHECKING:` and in a program's `if __name__ == "__main__":` block alike.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
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
    ("reviewflow.publish",),
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
    ("reviewflow.cancel", "reviewflow.home", "reviewflow.models", "reviewflow.fsutil"),
    ("reviewflow.errors", "reviewflow.version"),
    ("reviewflow",),  # the package itself: its version
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    return {
        _module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _imported_names(tree: ast.AST, *, lazy: bool = True) -> Iterator[str]:
    """Dotted names imported in `tree`; with `lazy` false, only those imported when the module
    itself is (none inside a function or an `if TYPE_CHECKING:` block). `from a import b`
    names `a.b` when that is a module of ours, else `a` (a package's `__init__` may import its
    own submodules: no cycle)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not lazy and (isinstance(node, _FUNCTIONS) or _is_type_checking_block(node)):
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            named = [f"{node.module}.{alias.name}" for alias in node.names]
            submodules = [name for name in named if name in modules()]
            yield from submodules
            if len(submodules) < len(named):
                yield node.module
        stack.extend(ast.iter_child_nodes(node))


@cache
def imports(module: str, *, lazy: bool = True) -> frozenset[str]:
    """The outside packages and the modules of ours that `module` imports."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    found = set()
    for name in _imported_names(tree, lazy=lazy):
        top = name.split(".")[0]
        if top not in PACKAGES:
            found.add(top)
        elif name in modules():
            found.add(name)
    return frozenset(found)


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


def _upward(layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a module into a layer above its own."""
    wrong = []
    for module in modules():
        mine = _layer(module, layers)
        for name in imports(module):
            theirs = _layer(name, layers)
            if mine is not None and theirs is not None and theirs < mine:
                wrong.append(f"{module} imports {name}")
    return sorted(wrong)


def test_the_domain_never_imports_prefect() -> None:
    offenders = [m for m in modules() if m.startswith("reviewflow") and "prefect" in imports(m)]
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
        eager = imports(current, lazy=False)
        assert "prefect" not in eager, f"{current}, imported by {module}"
        todo.extend(name for name in eager if name in modules())


def test_imports_run_one_way_between_the_top_layers() -> None:
    assert _upward(LAYERS) == []


def test_imports_run_one_way_between_the_stages_of_the_domain() -> None:
    assert _upward(DOMAIN) == []


def test_every_module_of_the_domain_has_a_rank() -> None:
    unranked = [
        m for m in modules() if m.startswith("reviewflow.") and _layer(m, DOMAIN[:-1]) is None
    ]
    assert unranked == []


def test_no_import_cycle_between_modules() -> None:
    graph = {module: {n for n in imports(module) if n in modules()} for module in modules()}
    assert _cycles(graph) == []


def test_no_import_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for module in modules():
        mine = _package(module)
        theirs = {_package(n) for n in imports(module) if n in modules()}
        graph.setdefault(mine, set()).update(theirs - {mine})
    assert _cycles(graph) == []


def test_the_checks_see_a_violation() -> None:
    """The walker finds function-level, type-checking and main-block imports; the cycle
    finder finds a cycle of two packages."""
    tree = ast.parse(
        "def f():\n    import prefect\n"
        "if TYPE_CHECKING:\n    import dask\n"
        "if __name__ == '__main__':\n    from flows.cli.entry import entry\n"
    )
    assert set(_imported_names(tree)) == {"prefect", "dask", "flows.cli.entry"}
    assert _cycles({"a": {"b"}, "b": {"a"}}) == ["a -> b -> a"]
    assert _layer("reviewflow.report.gate", DOMAIN) == 1 and _layer("reviewflow", DOMAIN) == 13
