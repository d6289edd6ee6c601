"""The layers of the code base hold: imports run one way and never in a cycle.

cli -> local -> flows -> tasks -> reviewflow (DESIGN.md, Layout). Inside the domain: report ->
cost -> findings -> review -> sast -> select / providers -> rules / config -> git -> globs.
Every import counts, at module level or inside a function, except a program's own
`if __name__ == "__main__":` block (`python -m flows.review` hands over to the CLI there: that
runs the module as a program, it is not an import of it).
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
LAYERS = ("flows.cli", "flows.local", "flows", "tasks", "reviewflow")
DOMAIN = (
    ("reviewflow.report",),
    ("reviewflow.cost",),
    ("reviewflow.findings",),
    ("reviewflow.review",),
    ("reviewflow.sast",),
    ("reviewflow.select", "reviewflow.providers"),
    ("reviewflow.rules", "reviewflow.config"),
    ("reviewflow.git",),
    ("reviewflow.globs",),
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


def _is_main_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
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
        if _is_main_block(node):
            continue
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
    for rank, prefixes in enumerate(layers):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


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
    assert _upward(tuple((layer,) for layer in LAYERS)) == []


def test_imports_run_one_way_between_the_stages_of_the_domain() -> None:
    assert _upward(DOMAIN) == []


def test_no_import_cycle() -> None:
    graph = {module: [n for n in imports(module) if n in modules()] for module in modules()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for name in graph[module]:
            if state.get(name) == 1:
                cycles.append(" -> ".join([*path[path.index(name) :], name]))
            elif name not in state:
                visit(name, [*path, name])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_checks_see_a_violation() -> None:
    """The walker finds function-level imports and skips only a program's main block."""
    tree = ast.parse(
        "def f():\n    import prefect\n"
        "if __name__ == '__main__':\n    from flows.cli.entry import entry\n"
    )
    assert set(_imported_names(tree)) == {"prefect"}
