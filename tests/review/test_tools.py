"""The read-only tools over a real repository: confinement, caps, search and find."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from reviewflow.errors import ToolError
from reviewflow.review import tools
from reviewflow.review.reader import Snapshot, confine
from reviewflow.review.tools import CodeSearchArgs, FileFindArgs
from tests.gitutil import GitRepo


@pytest.fixture
def committed(repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str]:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("TOP SECRET\n")
    repo.write("src/app.py", "import os\n\ndef main():\n    return os.getcwd()\n")
    repo.write("src/util/helpers.py", "def helper():\n    return 1\n")
    repo.write("docs/README.md", "hello\n")
    repo.symlink("src/inside_link.py", "app.py")
    repo.symlink("src/dir_link", "util")
    repo.symlink("leak_abs", str(outside / "secret.txt"))
    repo.symlink("leak_rel", "../" * 8 + str(outside / "secret.txt").lstrip("/"))
    repo.symlink("leak_dir", str(outside))
    return repo, repo.commit("base")


@pytest.fixture(params=["ref", "worktree"])
def snapshot(request: pytest.FixtureRequest, committed: tuple[GitRepo, str]) -> Snapshot:
    repo, sha = committed
    return Snapshot(repo_root=str(repo.root), ref=sha if request.param == "ref" else None)


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/etc/passwd", "absolute"),
        ("src/../../etc/passwd", "'..'"),
        ("..", "'..'"),
        (".git/config", ".git"),
        ("leak_abs", "symlink"),
        ("leak_rel", "symlink"),
        ("leak_dir/secret.txt", "symlink"),
    ],
)
def test_paths_that_leave_the_repository_are_refused(
    snapshot: Snapshot, path: str, words: str
) -> None:
    with pytest.raises(ToolError, match=words):
        confine(snapshot, path)


def test_symlinks_inside_the_repository_are_followed(snapshot: Snapshot) -> None:
    assert confine(snapshot, "src/inside_link.py") == "src/app.py"
    assert confine(snapshot, "./src//dir_link/helpers.py") == "src/util/helpers.py"
    lines = tools.read_lines(snapshot, confine(snapshot, "src/inside_link.py"))
    assert lines[0] == "import os"


def test_commit_snapshot_reads_the_reviewed_ref_not_the_working_tree(
    committed: tuple[GitRepo, str],
) -> None:
    repo, sha = committed
    repo.write("src/app.py", "changed in the working tree\n")
    at_ref = Snapshot(repo_root=str(repo.root), ref=sha)
    in_tree = Snapshot(repo_root=str(repo.root))
    assert tools.read_lines(at_ref, "src/app.py")[0] == "import os"
    assert tools.read_lines(in_tree, "src/app.py")[0] == "changed in the working tree"


def test_file_read_shows_numbered_lines_and_at_most_500() -> None:
    lines = [f"line {i}" for i in range(1, 1201)]
    args = tools.FileReadArgs(file_path="a.py", start_line=10)
    start, end = args.span()
    assert (start, end) == (10, 509)
    out = tools.render_read("a.py", lines, start, end)
    assert out.splitlines()[0] == "a.py lines 10-509 of 1200"
    assert out.splitlines()[1] == "10\tline 10" and len(out.splitlines()) == 501
    wide = tools.FileReadArgs(file_path="a.py", start_line=1, end_line=5000).span()
    assert wide == (1, 500)
    with pytest.raises(ToolError, match="past the end"):
        tools.render_read("a.py", lines, 1300, 1400)


def test_code_search_cuts_long_lines(repo: GitRepo) -> None:
    minified = "var a=1;" + "x" * 669_000 + "needle;"
    repo.write("dist/app.js", minified + "\n")
    repo.write("src/b.py", "needle = 1\n")
    sha = repo.commit("minified")
    out = tools.code_search(
        Snapshot(repo_root=str(repo.root), ref=sha), CodeSearchArgs(search_text="needle")
    )
    lines = out.splitlines()
    assert lines[0] == "2 matches"
    js = next(line for line in lines if line.startswith("dist/app.js:1:"))
    assert js.endswith(f"…[line cut: {len(minified)} chars]") and len(js) < 400
    assert "src/b.py:1:needle = 1" in lines


def test_code_search_options_and_pathspecs(snapshot: Snapshot) -> None:
    def search(**kwargs: object) -> str:
        return tools.code_search(snapshot, CodeSearchArgs.model_validate(kwargs))

    assert "src/app.py:1:import os" in search(search_text="import os")
    assert search(search_text="IMPORT OS") == "no matches"
    assert "src/app.py:1:" in search(search_text="IMPORT OS", case_sensitive=False)
    assert "src/app.py:3:" in search(search_text=r"def \w+\(", use_perl_regexp=True)
    assert search(search_text="def", file_patterns=["*.md"]) == "no matches"
    assert "helpers.py" in search(search_text="def", file_patterns=["src/util/*"])
    assert "app.py" not in search(search_text="def", file_patterns=[":!src/app.py"])
    for bad in ("/etc", "../x", "src/../../x", ":(top)x"):
        with pytest.raises(ValidationError, match="pathspec"):
            search(search_text="x", file_patterns=[bad])


def test_file_find_matches_base_names_not_globs(snapshot: Snapshot) -> None:
    out = tools.file_find(snapshot, FileFindArgs(query_name="HELP"))
    assert out.splitlines() == ["1 files", "src/util/helpers.py"]
    assert tools.file_find(snapshot, FileFindArgs(query_name="*.py")) == "no files found"
    assert tools.file_find(snapshot, FileFindArgs(query_name="util")) == "no files found"
    assert tools.file_find(snapshot, FileFindArgs(query_name="HELP", case_sensitive=True)) == (
        "no files found"
    )


def test_output_is_capped_at_32_kib_of_valid_utf8() -> None:
    text = "é" * 40_000 + "€" * 10
    capped = tools.cap_output(text)
    data = capped.encode("utf-8")
    assert len(data) <= 32 * 1024
    assert data.decode("utf-8") == capped  # valid UTF-8 throughout
    assert capped.endswith("[output cut at 32 KiB of 80030 bytes]")
    for offset in range(4):  # whatever byte the cut lands on
        assert tools.cap_output("x" * offset + "€" * 20_000).encode("utf-8").decode("utf-8")


def test_file_read_of_a_large_file_is_capped(repo: GitRepo) -> None:
    repo.write("wide.py", "".join(f"row_{i} = '{'ü' * 200}'\n" for i in range(600)))
    sha = repo.commit("wide")
    snapshot = Snapshot(repo_root=str(repo.root), ref=sha)
    out = tools.render_read("wide.py", tools.read_lines(snapshot, "wide.py"), 1, 500)
    assert len(out.encode("utf-8")) <= 32 * 1024 and "[output cut at 32 KiB" in out


def test_binary_and_missing_files_are_tool_errors(repo: GitRepo) -> None:
    repo.write("img.bin", b"\x89PNG\0\0\x01")
    sha = repo.commit("binary")
    snapshot = Snapshot(repo_root=str(repo.root), ref=sha)
    with pytest.raises(ToolError, match="binary"):
        tools.read_lines(snapshot, "img.bin")
    with pytest.raises(ToolError, match="does not exist"):
        tools.read_lines(snapshot, "nope.py")


def test_tool_block_is_the_fixed_contract() -> None:
    names = {d.name: set(d.parameters["properties"]) for d in tools.definitions()}
    assert names == {
        "file_read": {"file_path", "start_line", "end_line"},
        "code_search": {"search_text", "file_patterns", "case_sensitive", "use_perl_regexp"},
        "file_find": {"query_name", "case_sensitive"},
        "symbol_definition": {"name", "file_path"},
        "symbol_references": {"name", "file_path"},
        "code_comment": {"finding"},
        "task_done": set(),
    }
    for model, name in (
        (tools.FileReadArgs, "file_read"),
        (CodeSearchArgs, "code_search"),
        (FileFindArgs, "file_find"),
        (tools.SymbolArgs, "symbol_definition"),
        (tools.SymbolArgs, "symbol_references"),
    ):
        assert set(model.model_fields) == names[name]
    assert [d.name for d in tools.offered(False)] == ["code_comment", "task_done"]
    assert [d.name for d in tools.offered(False, symbols=True)] == ["code_comment", "task_done"]
    today = ["file_read", "code_search", "file_find", "code_comment", "task_done"]
    assert [d.name for d in tools.offered(True)] == today  # review.context off
    assert [d.name for d in tools.offered(True, symbols=True)] == list(names)


def test_file_find_output_is_valid_utf8_for_undecodable_names(repo: GitRepo) -> None:
    repo.write(os.fsdecode(b"lib/caf\xe9_utils.py"), "x = 1\n")
    sha = repo.commit("latin-1 name")
    for ref in (sha, None):
        snapshot = Snapshot(repo_root=str(repo.root), ref=ref)
        out = tools.file_find(snapshot, FileFindArgs(query_name="utils"))
        assert out.encode("utf-8").decode("utf-8") == out and "lib/caf\\xe9_utils.py" in out
        # The name as listed is one the model can read (issue 37 item 3).
        assert tools.read_lines(snapshot, confine(snapshot, "lib/caf\\xe9_utils.py")) == ["x = 1"]
        found = tools.code_search(snapshot, CodeSearchArgs(search_text="x = 1"))
        assert "lib/caf\\xe9_utils.py:1:x = 1" in found


def test_a_file_in_another_encoding_reads_as_its_diff_does(repo: GitRepo) -> None:
    """Issue 37 item 1: the tools decode a file as the change's text was decoded."""
    repo.write(".gitattributes", "*.txt encoding=ISO-8859-1\n")
    repo.write("notes.txt", b"# Gr\xf6\xdfe\n")
    repo.write("cookie.py", b"# coding: latin-1\nname = 'M\xfcller'\n")
    repo.write("plain.py", b"name = 'M\xfcller'\n")
    sha = repo.commit("latin-1")
    for ref in (sha, None):
        snapshot = Snapshot(repo_root=str(repo.root), ref=ref)
        assert tools.read_lines(snapshot, "notes.txt") == ["# Größe"]
        assert tools.read_lines(snapshot, "cookie.py")[1] == "name = 'Müller'"
        assert tools.read_lines(snapshot, "plain.py") == ["name = 'M\ufffdller'"]
