"""The context pack of a changed file, on real commits of real repositories: changed symbols
with their uses elsewhere, definitions the changed lines use, the budget and its order."""

from __future__ import annotations

import json
from pathlib import Path

from reviewflow.context.pack import ContextPack, build_pack, context_record
from reviewflow.context.records import IndexStats
from reviewflow.git.models import DiffMode
from reviewflow.git.snapshot import show_file
from reviewflow.review.tokens import estimate_tokens
from tests.context.conftest import index_of, make_repo
from tests.git.conftest import by_path, collect
from tests.gitutil import GitRepo

UTIL = (
    "from pkg.other import compute\n\n\n"
    'def helper(x):\n    """Double x."""\n    return x * 2\n\n\n'
    "def gone(y):\n    return y\n\n\n"
    "def old_name(a, b):\n    total = a + b\n    total = total * 2\n    return total\n\n\n"
    "class Box:\n    def size(self):\n        return 1\n\n    def weight(self):\n"
    "        return 2\n"
)
FILES = {
    "pkg/util.py": UTIL,
    "pkg/other.py": 'def compute(v):\n    """Compute v.\n\n    Details."""\n    return v\n',
    "pkg/main.py": "from pkg.util import Box, gone, helper, old_name\n\n\n"
    "def run():\n    return helper(3) + gone(1) + old_name(1, 2) + Box().size()\n",
    "tests/test_util.py": "from pkg.util import helper\n\n\ndef test_helper():\n"
    "    assert helper(2) == 4\n",
    "vendor/lib.py": "from pkg.util import helper\n\n\ndef vendored():\n    return helper(9)\n",
}


def _commit_and_pack(
    repo: GitRepo, path: str, tmp_path: Path, budget: int = 4000, **kw: object
) -> ContextPack:
    head = repo.commit("change")
    return _pack(repo, head, path, tmp_path, budget, **kw)


def _pack(
    repo: GitRepo, head: str, path: str, tmp_path: Path, budget: int = 4000, **kw: object
) -> ContextPack:
    change = collect(repo, DiffMode.COMMIT, commit=head)
    file = by_path(change)[path]
    old = show_file(repo.root, f"{head}~1", file.old_path or path)
    new = show_file(repo.root, head, path)
    return build_pack(
        file,
        old.decode() if old is not None else None,
        new.decode() if new is not None else None,
        index_of(repo, tmp_path / "store", head),
        budget_tokens=budget,
        count_tokens=estimate_tokens,
        **kw,  # type: ignore[arg-type]
    )


def _edit(text: str) -> str:
    return (
        text.replace("return x * 2", "return compute(x) * 2")
        .replace("def gone(y):\n    return y\n\n\n", "")
        .replace("old_name(a, b)", "new_name(a, b)")
        .replace("return 1\n", "return 10\n")
    )


def test_changed_symbols_their_uses_and_the_definitions_they_use(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write("pkg/util.py", _edit(UTIL))
    pack = _commit_and_pack(repo, "pkg/util.py", tmp_path)
    record = pack.record()
    changed = [(s["change"], s["name"], s["kind"]) for s in record["changed_symbols"]]
    assert changed == [
        ("deleted", "gone", "function"),
        ("renamed", "new_name", "function"),
        ("edited", "helper", "function"),
        ("edited", "size", "method"),  # the method, not its class
    ]
    refs = {s["name"]: s["references"] for s in record["changed_symbols"]}
    still = [
        {"path": "pkg/main.py", "line": 1, "in": ""},  # its import breaks too
        {"path": "pkg/main.py", "line": 5, "in": "def run()"},
    ]
    assert refs["gone"] == still
    assert refs["new_name"] == still
    assert [(r["path"], r["line"]) for r in refs["helper"]] == [
        ("pkg/main.py", 5),  # the same package first
        ("tests/test_util.py", 5),  # then tests
        ("vendor/lib.py", 5),  # then the rest
    ]
    assert record["changed_symbols"][1]["old_name"] == "old_name"
    assert record["used_definitions"] == [
        {"name": "compute", "path": "pkg/other.py", "line": 1, "signature": "def compute(v)"}
    ]
    text = pack.render()
    assert "pkg/other.py:1 def compute(v) - Compute v." in text
    assert "pkg/main.py:5 in `def run()`: return helper(3) + gone(1)" in text
    assert record["tokens"] == pack.tokens == estimate_tokens(text)
    assert set(record) == {"path", "tokens", "changed_symbols", "used_definitions"}
    stats = IndexStats(files=5, parsed=1, reused=4, seconds=0.25)
    document = json.loads(json.dumps(context_record([pack], stats)))
    assert document == {
        "files": [record],
        "index": {"files": 5, "parsed": 1, "reused": 4, "seconds": 0.25},
    }


def test_files_the_filter_excludes_never_fill_a_pack(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write("pkg/util.py", _edit(UTIL))
    pack = _commit_and_pack(
        repo, "pkg/util.py", tmp_path, eligible=lambda p: not p.startswith("vendor/")
    )
    paths = {r.path for s in pack.changed_symbols for r in s.references}
    assert paths == {"pkg/main.py", "tests/test_util.py"}


def test_a_deleted_symbol_still_used_is_shown_whatever_the_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write("pkg/util.py", _edit(UTIL))
    pack = _commit_and_pack(repo, "pkg/util.py", tmp_path, budget=1)
    assert [(s.change, s.name, len(s.references)) for s in pack.changed_symbols] == [
        ("deleted", "gone", 2),
        ("renamed", "new_name", 2),
    ]
    assert pack.used_definitions == ()
    assert pack.omitted > 0
    assert "deleted function gone, old line 9" in pack.render()


def test_the_budget_keeps_a_fixed_order_and_counts_what_it_leaves_out(tmp_path: Path) -> None:
    callers = {
        f"app/mod{i:02}.py": f"from pkg.util import helper\n\n\ndef use{i}():\n"
        f"    return helper({i})\n"
        for i in range(30)
    }
    repo = make_repo(tmp_path / "repo", {**FILES, **callers})
    repo.write("pkg/util.py", UTIL.replace("return x * 2", "return x * 3"))
    head = repo.commit("change")
    full = _pack(repo, head, "pkg/util.py", tmp_path)
    helper = full.changed_symbols[0]
    assert helper.name == "helper" and len(helper.references) == 20 and helper.omitted == 13
    budgets = [100, 200, 400]
    packs = [_pack(repo, head, "pkg/util.py", tmp_path, budget=b) for b in budgets]
    for budget, pack in zip(budgets, packs, strict=True):
        assert 0 < pack.tokens <= budget
        shown = pack.changed_symbols[0].references
        assert shown == helper.references[: len(shown)]  # a prefix of the ranked list
        assert pack.changed_symbols[0].omitted == 33 - len(shown)
    assert [len(p.changed_symbols[0].references) for p in packs] == sorted(
        len(p.changed_symbols[0].references) for p in packs
    )
    again = _pack(repo, head, "pkg/util.py", tmp_path, budget=200)
    assert again == packs[1]


def test_an_added_file_and_a_deleted_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    repo.write(
        "pkg/extra.py", "from pkg.util import helper\n\n\ndef extra():\n    return helper(1)\n"
    )
    added = _commit_and_pack(repo, "pkg/extra.py", tmp_path)
    assert [(s.change, s.name) for s in added.changed_symbols] == [("added", "extra")]
    assert [(d.name, d.path, d.doc) for d in added.used_definitions] == [
        ("helper", "pkg/util.py", "Double x.")
    ]
    (repo.root / "pkg/other.py").unlink()
    deleted = _commit_and_pack(repo, "pkg/other.py", tmp_path)
    assert [(s.change, s.name) for s in deleted.changed_symbols] == [("deleted", "compute")]
    assert [(r.path, r.line) for r in deleted.changed_symbols[0].references] == [("pkg/util.py", 1)]


def test_a_c_function_deleted_but_still_called(tmp_path: Path) -> None:
    files = {
        "strbuf.h": "/* Grow the buffer. */\nvoid strbuf_grow(int n);\nint strbuf_len(void);\n",
        "strbuf.c": '#include "strbuf.h"\n\nvoid strbuf_grow(int n)\n{\n}\n\n'
        "int strbuf_len(void)\n{\n\treturn 0;\n}\n",
        "builtin/add.c": '#include "../strbuf.h"\n\nint cmd_add(void)\n{\n'
        "\tstrbuf_grow(1);\n\treturn strbuf_len();\n}\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    repo.write("strbuf.c", '#include "strbuf.h"\n\nint strbuf_len(void)\n{\n\treturn 1;\n}\n')
    pack = _commit_and_pack(repo, "strbuf.c", tmp_path)
    assert [(s.change, s.name) for s in pack.changed_symbols] == [
        ("deleted", "strbuf_grow"),
        ("edited", "strbuf_len"),
    ]
    refs = [(r.path, r.line, r.in_) for r in pack.changed_symbols[0].references]
    assert refs == [("builtin/add.c", 5, "int cmd_add(void)")]


def test_a_symbol_deleted_from_a_renamed_file_is_found_by_its_old_module(tmp_path: Path) -> None:
    body = "def keep(x):\n    return x + 1\n\n\ndef drop(y):\n    return y\n"
    files = {
        "pkg/old.py": body,
        "pkg/use.py": "from pkg.old import drop\n\n\ndef use():\n    return drop(1)\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    repo.git("mv", "pkg/old.py", "pkg/new.py")
    repo.write("pkg/new.py", body.replace("\n\n\ndef drop(y):\n    return y\n", "\n"))
    pack = _commit_and_pack(repo, "pkg/new.py", tmp_path)
    assert [(s.change, s.name) for s in pack.changed_symbols] == [("deleted", "drop")]
    refs = [(r.path, r.line) for r in pack.changed_symbols[0].references]
    assert refs == [("pkg/use.py", 1), ("pkg/use.py", 5)]
