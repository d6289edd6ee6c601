"""No module hands state between layers: no function in reviewflow/, tasks/ or flows/ mutates a
dict, set or list bound at module level (a registry of pools or tokens, say). What a run needs is
owned by an object whose lifetime is the run (`PoolRegistry`, the held publishing token) and
handed to, or reached through the context of, the code that needs it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reviewflow", "tasks", "flows")
MUTATORS = {"add", "append", "appendleft", "clear", "discard", "extend", "insert", "pop"}
MUTATORS |= {"popitem", "remove", "setdefault", "update"}


def module_state_writes(source: str) -> list[str]:
    """Where a function of this module changes a container bound at module level (or declares
    a name `global`)."""
    tree = ast.parse(source)
    bound = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        bound |= {target.id for target in targets if isinstance(target, ast.Name)}
    found = []
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found += [f"{node.lineno}: global {name}" for name in node.names]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id in bound and node.func.attr in MUTATORS:
                    found.append(f"{node.lineno}: {owner.id}.{node.func.attr}(...)")
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
                for target in targets:
                    value = target.value if isinstance(target, ast.Subscript) else None
                    if isinstance(value, ast.Name) and value.id in bound:
                        found.append(f"{node.lineno}: {value.id}[...] written")
    return found


def test_the_check_finds_a_module_registry() -> None:
    registry = (
        "_POOLS: dict[str, object] = {}\n_STOPPED = set()\n"
        "def register(pool):\n    _POOLS[pool.id] = pool\n"
        "def stop(ids):\n    _STOPPED.update(ids)\n"
        "def forget(pool):\n    del _POOLS[pool.id]\n"
    )
    assert module_state_writes(registry) == [
        "4: _POOLS[...] written",
        "6: _STOPPED.update(...)",
        "8: _POOLS[...] written",
    ]


def test_no_module_hands_state_between_layers() -> None:
    found = {
        str(path.relative_to(ROOT)): writes
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (writes := module_state_writes(path.read_text(encoding="utf-8")))
    }
    assert found == {}
