"""Building the index of a Git tree: what is parsed, what is reused, how uses are ranked."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.context import languages
from reviewflow.context.build import build_index, index_tree, list_sources
from reviewflow.context.store import IndexStore, IndexStoreError
from reviewflow.errors import GitError
from tests.context.conftest import index_of, make_repo

PY_FILES = {
    "pkg/util.py": 'def helper(x):\n    """Double x."""\n    return x * 2\n',
    "pkg/main.py": "from pkg.util import helper\n\n\ndef run():\n    return helper(3)\n",
    "pkg/side.py": "from . import util\n\n\ndef side():\n    return util.helper(1)\n",
    "tests/test_util.py": "from pkg.util import helper\n\n\ndef test_it():\n"
    "    assert helper(2) == 4\n",
    "other/thing.py": "def helper():\n    return 0\n\n\ndef use():\n    return helper()\n",
    "other/stray.py": "def stray(obj):\n    return helper(1)\n",
    "README.md": "not source\n",
}


def test_a_second_build_parses_no_unchanged_blob(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    seen: list[tuple[int, int]] = []
    with IndexStore(tmp_path / "store") as store:
        first = build_index(
            repo.root, "HEAD", store, lambda done, total: seen.append((done, total))
        )
        again = build_index(repo.root, "HEAD", store)
    assert (first.files, first.parsed, first.reused) == (6, 6, 0)
    assert seen[-1] == (6, 6)
    assert (again.files, again.parsed, again.reused) == (6, 0, 6)
    repo.write("pkg/main.py", PY_FILES["pkg/main.py"] + "\n\ndef more():\n    return run()\n")
    repo.write("pkg/copy.py", PY_FILES["pkg/util.py"])  # a blob already indexed
    repo.commit("one more")
    with IndexStore(tmp_path / "store") as store:
        third = build_index(repo.root, "HEAD", store)
    assert (third.files, third.parsed, third.reused) == (7, 1, 6)


def test_the_index_reads_what_it_stored(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    fresh = index_of(repo, tmp_path / "store")
    reused = index_of(repo, tmp_path / "store")
    assert reused.stats.parsed == 0
    assert reused.files == fresh.files


def test_uses_are_ranked_and_a_bare_name_match_is_not_a_use(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    index = index_of(repo, tmp_path / "store")
    hits = index.references("helper", "pkg/util.py")
    ranked = [(h.path, h.reference.line, h.link) for h in hits]
    assert ranked == [
        ("pkg/main.py", 1, "confirmed"),  # the same package: its import, its call
        ("pkg/main.py", 5, "confirmed"),
        ("pkg/side.py", 5, "confirmed"),  # through `from . import util`
        ("tests/test_util.py", 1, "confirmed"),  # tests
        ("tests/test_util.py", 5, "confirmed"),
        ("other/stray.py", 2, None),  # a bare name match: last
        ("other/thing.py", 6, None),  # its own `helper`
    ]
    linked = index.references("helper", "pkg/util.py", linked_only=True)
    assert {h.path for h in linked} == {"pkg/main.py", "pkg/side.py", "tests/test_util.py"}
    assert [h.reference.kind for h in linked] == ["import", "call", "call", "import", "call"]
    assert [h.scope.signature for h in linked if h.scope] == [
        "def run()",
        "def side()",
        "def test_it()",
    ]


def test_definitions_seen_from_a_file_put_the_reachable_one_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    index = index_of(repo, tmp_path / "store")
    assert [h.path for h in index.definitions("helper", "pkg/main.py")] == [
        "pkg/util.py",
        "other/thing.py",
    ]
    assert [h.path for h in index.definitions("helper", "other/thing.py")] == [
        "other/thing.py",
        "pkg/util.py",
    ]
    main = index.files["pkg/main.py"]
    use = next(r for r in main.references if r.name == "helper")
    found = index.resolve("pkg/main.py", use)
    assert found is not None and found.path == "pkg/util.py"
    stray = next(r for r in index.files["other/stray.py"].references if r.name == "helper")
    assert index.resolve("other/stray.py", stray) is None


def test_an_attribute_of_another_object_is_not_a_use_of_a_top_level_function(
    tmp_path: Path,
) -> None:
    """`config.review` names no top-level `review`, in its file or in one importing it; a
    method reached through an object of unknown type still links, as likely."""
    files = {
        "pkg/flow.py": "def review(x):\n    return x\n\n\ndef run(config):\n"
        "    return review(config.review)\n\n\nclass Box:\n    def size(self):\n"
        "        return 1\n",
        "pkg/cli.py": "from pkg.flow import Box, review\n\n\ndef main(config, box):\n"
        "    review(config.review.fail_on)\n    return box.size()\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    index = index_of(repo, tmp_path / "store")
    linked = index.references("review", "pkg/flow.py", linked_only=True)
    assert [(h.path, h.reference.line, h.link) for h in linked] == [
        ("pkg/flow.py", 6, "confirmed"),
        ("pkg/cli.py", 1, "confirmed"),  # its import
        ("pkg/cli.py", 5, "confirmed"),
    ]
    sized = index.references("size", "pkg/flow.py", linked_only=True)
    assert [(h.path, h.reference.line, h.link) for h in sized] == [("pkg/cli.py", 6, "likely")]


def test_c_static_functions_stay_in_their_file(tmp_path: Path) -> None:
    files = {
        "lib.h": "int helper(int x);\n",
        "lib.c": '#include "lib.h"\nint helper(int x) { return x; }\n',
        "a.c": '#include "lib.h"\nint a(void) { return helper(1); }\n',
        "b.c": "static int helper(int y) { return y; }\nint b(void) { return helper(2); }\n",
        "c.c": "int c(void) { return helper(3); }\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    index = index_of(repo, tmp_path / "store")
    linked = index.references("helper", "lib.c", linked_only=True)
    assert [(h.path, h.link) for h in linked] == [("a.c", "confirmed"), ("c.c", "confirmed")]
    own = index.references("helper", "b.c", linked_only=True)
    assert [(h.path, h.reference.line) for h in own] == [("b.c", 2)]
    assert [h.definition.kind for h in index.definitions("helper")][-1] == "prototype"


def test_large_files_symlinks_and_other_files_are_not_parsed(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"big.py": "x = 1\n" * 200_000, "ok.py": "def f():\n    pass\n", "notes.txt": "hi\n"},
    )
    repo.symlink("link.py", "ok.py")
    repo.commit("link")
    assert set(list_sources(repo.root, "HEAD")) == {"ok.py"}


def test_an_unknown_tree_is_one_git_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    with IndexStore(tmp_path / "store") as store, pytest.raises(GitError) as err:
        index_tree(repo.root, "no-such-branch", store)
    assert "\n" not in str(err.value)


def test_a_store_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(IndexStoreError) as err:
        IndexStore(tmp_path / "file" / "index")
    assert str(err.value).startswith("cannot open the code index at ")
    assert err.value.exit_code == 2


def test_records_of_another_parser_version_are_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", PY_FILES)
    with IndexStore(tmp_path / "store") as store:
        assert build_index(repo.root, "HEAD", store).parsed == 6
        monkeypatch.setattr(languages, "RECORD_VERSION", languages.RECORD_VERSION + 1)
        languages.load.cache_clear()
        try:
            assert build_index(repo.root, "HEAD", store).parsed == 6
        finally:
            monkeypatch.undo()
            languages.load.cache_clear()
        assert build_index(repo.root, "HEAD", store).parsed == 0


def test_c_headers_macros_and_other_languages(tmp_path: Path) -> None:
    files = {
        "util.h": "#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))\n"
        "static inline int twice(int x) { return 2 * x; }\n",
        "contrib/tool.c": "#define ARRAY_SIZE(x) (sizeof(x)/sizeof(x[0]))\n",
        "main.c": '#include "util.h"\n\nint run(int *v)\n{\n'
        "\treturn twice(ARRAY_SIZE(v)) + helper();\n}\n",
        "t/lib.sh": "helper() {\n  echo 1\n}\ntwice() {\n  echo 2\n}\n",
    }
    repo = make_repo(tmp_path / "repo", files)
    index = index_of(repo, tmp_path / "store")
    uses = {r.name: r for r in index.files["main.c"].references}
    found = index.resolve("main.c", uses["ARRAY_SIZE"])
    assert found is not None and found.path == "util.h"  # the included one, not contrib's
    assert index.resolve("main.c", uses["helper"]) is None  # a shell function is not C
    twice = index.resolve("main.c", uses["twice"])
    assert twice is not None and twice.path == "util.h"
    # A static inline function of a header is every includer's.
    linked = index.references("twice", "util.h", linked_only=True)
    assert [(h.path, h.link) for h in linked] == [("main.c", "confirmed")]


def test_a_damaged_store_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "index.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(IndexStoreError) as err:
        IndexStore(tmp_path / "store")
    assert str(err.value).startswith(f"cannot open the code index at {tmp_path}/store/")
    assert str(err.value).endswith("remove it to rebuild it") and "\n" not in str(err.value)
    repo = make_repo(tmp_path / "repo", PY_FILES)
    with IndexStore(tmp_path / "good") as store:
        build_index(repo.root, "HEAD", store)
        store._db.execute("UPDATE records SET record = x'00'")
        with pytest.raises(IndexStoreError, match="a damaged record"):
            index_tree(repo.root, "HEAD", store)
