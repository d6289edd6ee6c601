"""The model's symbol tools (`symbol_definition`, `symbol_references`) over a real repository's
code index: in a real tool loop through the scripted wire server, their caps, names not
found, bad arguments, and a loop without them (the tool block of today)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.context.build import index_tree
from reviewflow.context.query import CodeIndex
from reviewflow.context.store import IndexStore
from reviewflow.cost.estimate import estimate_file
from reviewflow.cost.sizes import file_sizes
from reviewflow.providers.messages import ModelRequest, ToolCall, UserMessage
from reviewflow.review import tools
from reviewflow.review.jobs import FileJob
from reviewflow.review.loop import review_chunk
from reviewflow.review.reader import Snapshot, ship
from reviewflow.review.session import ToolSession
from reviewflow.review.symbols import SymbolSource
from reviewflow.review.tokens import estimate_request
from tests.gitutil import GitRepo
from tests.review.helpers import commit_scope, conversation, jobs_and_snapshot, sending, tool_names
from tests.wire_server import PROTOCOLS, Call, ToolCalls, WireServer

UTIL = '''"""Helpers."""


def scale(value: int, factor: int = 2) -> int:
    """Multiply a value by the factor."""
    return value * factor
'''
MAIN = """from pkg.util import scale


def run(items: list[int]) -> list[int]:
    return [scale(item) for item in items]
"""
TEST = """from pkg.util import scale


def test_scale() -> None:
    assert scale(2) == 4
"""
TODAY = ["file_read", "code_search", "file_find", "code_comment", "task_done"]
WITH_SYMBOLS = [*TODAY[:3], "symbol_definition", "symbol_references", *TODAY[3:]]


@pytest.fixture
def change(repo: GitRepo, rf_home: Path) -> tuple[dict[str, FileJob], Snapshot]:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/util.py", UTIL)
    repo.write("pkg/main.py", MAIN)
    repo.write("tests/test_util.py", TEST)
    repo.commit("base")
    repo.write("pkg/util.py", UTIL.replace("value * factor", "value * factor + 1"))
    return jobs_and_snapshot(commit_scope(repo, rf_home, repo.commit("change")))


def loader(snapshot: Snapshot, store: Path, loads: list[int]) -> CodeIndex:
    loads.append(1)
    with IndexStore(store) as opened:
        return index_tree(snapshot.root, f"{snapshot.ref}^{{tree}}", opened)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_model_asks_where_a_symbol_is_defined_and_used(
    wire: WireServer,
    protocol: str,
    change: tuple[dict[str, FileJob], Snapshot],
    tmp_path: Path,
) -> None:
    jobs, snapshot = change
    wire.script(
        protocol,
        [
            ToolCalls(Call("symbol_definition", {"name": "scale", "file_path": "pkg/main.py"})),
            ToolCalls(Call("symbol_references", {"name": "scale", "file_path": "pkg/util.py"})),
            ToolCalls(Call("symbol_references", {"name": "scale", "file_path": "pkg/util.py"})),
            ToolCalls(Call("task_done", {})),
        ],
    )
    loads: list[int] = []
    with sending(wire, protocol) as send:
        result = review_chunk(
            jobs["pkg/util.py"],
            0,
            None,
            snapshot,
            ReviewSettings(),
            send,
            lambda: loader(snapshot, tmp_path / "index", loads),
        )
    wire.assert_done()
    assert result.complete and result.warnings == ()
    assert loads == [1]  # loaded on the first symbol call, kept for the loop
    assert [tool_names(protocol, r.body) for r in wire.requests()] == [WITH_SYMBOLS] * 4
    defined, used, again = (r.tool_calls[0] for r in result.records[:3])
    assert defined.status == "ok" and used.status == "ok" and again.status == "cached"
    signature = "def scale(value: int, factor: int = 2) -> int"
    assert f"pkg/util.py:4: {signature}  [function scale]" in defined.output
    assert "doc: Multiply a value by the factor." in defined.output
    assert "pkg/main.py:5: return [scale(item) for item in items]" in used.output
    assert "[in def run(items: list[int]) -> list[int]; call, confirmed]" in used.output
    assert "tests/test_util.py:5: assert scale(2) == 4  [in def test_scale() -> None" in used.output
    bodies = [conversation(r.body) for r in wire.requests()]
    assert "pkg/util.py:4: def scale(" in bodies[1]  # the answer went back to the model
    assert "pkg/main.py:5: return [scale(item)" in bodies[2]


@pytest.mark.parametrize("protocol", PROTOCOLS[:1])
def test_without_the_index_the_tool_block_is_todays(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    jobs, snapshot = change
    wire.script(
        protocol,
        [ToolCalls(Call("symbol_definition", {"name": "scale"})), ToolCalls(Call("task_done", {}))],
    )
    with sending(wire, protocol) as send:
        result = review_chunk(jobs["pkg/util.py"], 0, None, snapshot, ReviewSettings(), send)
    assert [tool_names(protocol, r.body) for r in wire.requests()] == [TODAY, TODAY]
    refused = result.records[0].tool_calls[0]
    assert refused.status == "error"
    assert refused.output == ("error: unknown tool 'symbol_definition': use " + ", ".join(TODAY))


def session(snapshot: Snapshot, store: Path, budget: int = 5) -> ToolSession:
    loads: list[int] = []
    return ToolSession(
        snapshot, "pkg/util.py", 0, budget, symbols=lambda: loader(snapshot, store, loads)
    )


def call(name: str, arguments: dict[str, object]) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def test_a_name_not_found_says_so(
    change: tuple[dict[str, FileJob], Snapshot], tmp_path: Path
) -> None:
    tools_session = session(change[1], tmp_path)
    found = tools_session.run(call("symbol_definition", {"name": "nowhere"}))
    assert found.valid and found.message.content.startswith("no definition of 'nowhere' ")
    used = tools_session.run(call("symbol_references", {"name": "nowhere"}))
    assert used.message.content == (
        "no references to 'nowhere' in the source files of the reviewed snapshot"
    )
    assert tools_session.used == 2


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "name: Field required"),
        ({"name": ""}, "name: "),
        ({"name": 3}, "name: Input should be a valid string"),
        ({"name": "scale(x)"}, "give one symbol name"),
        ({"name": "scale", "file_path": "/etc/passwd"}, "is absolute"),
        ({"name": "scale", "file_path": "../x.py"}, "'..'"),
        ({"name": "::"}, "is not a symbol name"),
    ],
)
def test_bad_arguments_are_a_tool_error_and_cost_nothing(
    change: tuple[dict[str, FileJob], Snapshot],
    tmp_path: Path,
    arguments: dict[str, object],
    words: str,
) -> None:
    tools_session = session(change[1], tmp_path)
    outcome = tools_session.run(call("symbol_references", arguments))
    assert not outcome.valid and outcome.message.is_error
    assert outcome.message.content.startswith("error: ") and words in outcome.message.content
    assert tools_session.used == 0


def test_answers_are_capped_like_code_search(repo: GitRepo, tmp_path: Path) -> None:
    calls = "".join(f"    tick({i})\n" for i in range(tools.MAX_SYMBOL_HITS + 30))
    repo.write("clock.py", "def tick(n):\n    return n\n\n\ndef loop():\n" + calls)
    repo.write("long.py", "def tick(" + ", ".join(f"a{i}" for i in range(200)) + "):\n    pass\n")
    snapshot = Snapshot(repo_root=str(repo.root), ref=repo.commit("ticks"))
    tools_session = session(snapshot, tmp_path)
    used = tools_session.run(call("symbol_references", {"name": "tick", "file_path": "clock.py"}))
    lines = used.message.content.splitlines()
    assert lines[0] == f"{tools.MAX_SYMBOL_HITS + 30} references to 'tick' (defined in clock.py)"
    assert len(lines) == tools.MAX_SYMBOL_HITS + 2 and lines[-1] == "[30 more not shown]"
    assert lines[1] == "clock.py:6: tick(0)  [in def loop(); call, confirmed]"
    defined = tools_session.run(call("symbol_definition", {"name": "tick"}))
    assert "2 definitions of 'tick'" in defined.message.content
    long_line = defined.message.content.splitlines()[2]  # the 200-parameter signature, cut
    assert long_line.startswith("long.py:1: def tick(a0, a1") and "…" in long_line
    assert len(long_line) < tools.MAX_MATCH_CHARS
    bare = tools_session.run(call("symbol_references", {"name": "tick"}))
    assert bare.message.content.splitlines()[1] == (
        "[several definitions share this name: give file_path to tie uses to one]"
    )
    assert "clock.py:6: tick(0)  [in def loop(); call, name match only]" in bare.message.content


def test_a_qualified_name_picks_its_definition(repo: GitRepo, tmp_path: Path) -> None:
    repo.write(
        "shapes.py",
        "class Box:\n    def size(self):\n        return 1\n\n\n"
        "class Bag:\n    def size(self):\n        return 2\n",
    )
    snapshot = Snapshot(repo_root=str(repo.root), ref=repo.commit("shapes"))
    out = session(snapshot, tmp_path).run(call("symbol_definition", {"name": "Bag.size"}))
    assert out.message.content.splitlines() == [
        "1 definition of 'Bag.size'",
        "shapes.py:7: def size(self)  [method Bag.size]",
    ]


def test_an_index_that_cannot_be_read_is_a_tool_error(
    change: tuple[dict[str, FileJob], Snapshot], tmp_path: Path
) -> None:
    (tmp_path / "index").write_text("a file where the store's directory should be")
    tools_session = session(change[1], tmp_path / "index")
    outcome = tools_session.run(call("symbol_definition", {"name": "scale"}))
    assert outcome.message.is_error and tools_session.used == 0
    assert outcome.message.content.startswith(
        "error: the code index of the reviewed tree cannot be read: cannot open the code index"
    )


def test_the_estimate_counts_the_symbol_tools_in_every_main_request(
    change: tuple[dict[str, FileJob], Snapshot],
) -> None:
    jobs, snapshot = change
    job = jobs["pkg/util.py"]
    size = file_sizes(snapshot, [job.path])[job.path]
    on = estimate_file(job, size, ReviewSettings(context=True)).stages["main"]
    off = estimate_file(job, size, ReviewSettings(context=False)).stages["main"]
    hello = (UserMessage(content="hello"),)
    block = ModelRequest(system="", messages=hello, tools=tools.offered(True, symbols=True))
    today = ModelRequest(system="", messages=hello, tools=tools.offered(True))
    per_request = estimate_request(block) - estimate_request(today)
    assert per_request > 0 and on.requests == off.requests
    assert on.prompt_tokens - off.prompt_tokens == pytest.approx(on.requests * per_request)


def test_a_shipped_snapshot_answers_from_its_clone_and_the_shared_store(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a Dask worker the tools read the bundle's clone; the index is the shared store's."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # a worker's own clones
    repo.write("pkg/util.py", UTIL)
    repo.commit("base")
    repo.write("pkg/new.py", "from pkg.util import scale\n\n\ndef grow(v):\n    return scale(v)\n")
    shipped = ship(Snapshot(repo_root=str(repo.root)), tmp_path / "store")
    source = SymbolSource(store_dir=str(tmp_path / "store" / "index"))
    tools_session = ToolSession(shipped, "pkg/util.py", 0, 5, symbols=source.loader(shipped))
    out = tools_session.run(
        call("symbol_references", {"name": "scale", "file_path": "pkg/util.py"})
    )
    assert "pkg/new.py:5: return scale(v)  [in def grow(v); call, confirmed]" in out.message.content
    assert (tmp_path / "store" / "index" / "index.sqlite").is_file()
