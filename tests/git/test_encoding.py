"""Files in other encodings: their text decoded as Git's attributes or the file declare, else
read as UTF-8 with replacement characters and a note (issue 37 item 1)."""

from __future__ import annotations

import os
from pathlib import Path

from reviewflow.cost.sizes import file_sizes
from reviewflow.git.encoding import decode_text, from_shown, shown
from reviewflow.git.models import Change, DiffMode, FileDiff
from reviewflow.review.reader import Snapshot
from reviewflow.select.filtering import path_problem
from tests.git.conftest import by_path, collect
from tests.gitutil import GitRepo

LATIN1 = b'# Gr\xf6\xdfe\nname = "M\xfcller"\n'
COOKIE = b"# -*- coding: latin-1 -*-\n"


def _texts(diff: FileDiff) -> list[str]:
    return [line.text for hunk in diff.hunks for line in hunk.lines]


def _utf8(change: Change) -> None:
    """Every text of the change encodes as UTF-8: it can go into a JSON body."""
    for diff in change.files:
        for hunk in diff.hunks:
            "\n".join([hunk.section, *hunk.body]).encode("utf-8")


def test_undeclared_latin1_is_read_with_replacement_characters_and_a_note(repo: GitRepo) -> None:
    repo.write("base.py", "x = 1\n")
    repo.commit("base")
    repo.write("latin1.py", LATIN1)
    for change in (collect(repo), collect(repo.root, DiffMode.COMMIT, commit=repo.commit())):
        _utf8(change)
        assert _texts(by_path(change)["latin1.py"]) == ["# Gr\ufffd\ufffde", 'name = "M\ufffdller"']
        [(path, note)] = change.encoding_notes
        assert path == "latin1.py"
        assert note.startswith("latin1.py: not valid UTF-8 and it declares no encoding: ")
        assert "U+FFFD" in note


def test_a_coding_line_is_honoured(repo: GitRepo) -> None:
    repo.write("base.py", "x = 1\n")
    repo.commit("base")
    repo.write("latin1.py", COOKIE + LATIN1)
    change = collect(repo.root, DiffMode.COMMIT, commit=repo.commit())
    assert _texts(by_path(change)["latin1.py"])[1:] == ["# Größe", 'name = "Müller"']
    assert change.encoding_notes == ()


def test_a_coding_line_outside_the_hunk_is_read_from_the_file(repo: GitRepo) -> None:
    body = COOKIE + b"".join(b"x%d = %d\n" % (i, i) for i in range(20))
    repo.write("far.py", body)
    repo.commit("base")
    repo.write("far.py", body + b'name = "M\xfcller"\n')
    for change in (collect(repo), collect(repo.root, DiffMode.COMMIT, commit=repo.commit())):
        assert 'name = "Müller"' in _texts(by_path(change)["far.py"])
        assert change.encoding_notes == ()
    repo.git("rm", "-q", "far.py")
    deleted = collect(repo.root, DiffMode.COMMIT, commit=repo.commit("gone"))
    assert 'name = "Müller"' in _texts(by_path(deleted)["far.py"])  # the old side's line


def test_a_gitattributes_encoding_is_honoured(repo: GitRepo) -> None:
    repo.write(".gitattributes", "*.txt encoding=ISO-8859-1\n")
    repo.commit("attributes")
    repo.write("notes.txt", LATIN1)
    assert _texts(by_path(collect(repo))["notes.txt"]) == ["# Größe", 'name = "Müller"']
    change = collect(repo.root, DiffMode.COMMIT, commit=repo.commit())
    assert _texts(by_path(change)["notes.txt"]) == ["# Größe", 'name = "Müller"']
    assert change.encoding_notes == ()
    # The attribute is the commit's, not the working tree's.
    repo.write(".gitattributes", "")
    again = collect(repo.root, DiffMode.COMMIT, commit="HEAD")
    assert _texts(by_path(again)["notes.txt"]) == ["# Größe", 'name = "Müller"']


def test_an_unusable_declaration_is_noted(repo: GitRepo) -> None:
    repo.write("wide.py", b"# coding: utf-16\n" + LATIN1)
    repo.write("bogus.py", b"# coding: no-such-codec\n" + LATIN1)
    change = collect(repo)
    _utf8(change)
    notes = dict(change.encoding_notes)
    assert "'utf-16', not usable here" in notes["wide.py"]
    assert "'no-such-codec', not usable here" in notes["bogus.py"]


def test_utf8_files_are_untouched(repo: GitRepo) -> None:
    repo.write("ok.py", "# Größe\n")
    change = collect(repo)
    assert _texts(change.files[0]) == ["# Größe"] and change.encoding_notes == ()


def test_decode_text_and_names() -> None:
    assert decode_text(LATIN1) == ('# Gr\ufffd\ufffde\nname = "M\ufffdller"\n', None)
    assert decode_text(COOKIE + LATIN1)[1] == "iso8859-1"
    assert decode_text("é".encode()) == ("é", "utf-8")
    name = b"caf\xe9.py".decode("utf-8", "surrogateescape")
    assert shown(name) == "caf\\xe9.py" and from_shown(shown(name)) == name
    assert from_shown("plain.py") == "plain.py" and from_shown("a\\x41") == "a\\x41"


def test_a_shown_name_is_checked_as_the_file_it_names(repo: GitRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo.symlink(os.fsdecode(b"d\xe9p"), str(outside))
    assert path_problem("d\\xe9p/secret.py", repo.root) == "symlink escapes the repository"


def test_names_that_are_not_utf8_are_shown(repo: GitRepo) -> None:
    repo.write("base.py", "x = 1\n")
    repo.commit("base")
    (repo.root / os.fsdecode(b"caf\xe9.py")).write_bytes(b"y = 2\n")
    assert [f.path for f in collect(repo).files] == ["caf\\xe9.py"]  # untracked
    repo.commit("name")
    repo.git("mv", os.fsdecode(b"caf\xe9.py"), os.fsdecode(b"d\xe9j\xe0.py"))
    [moved] = collect(repo.root, DiffMode.COMMIT, commit=repo.commit("move")).files
    assert (moved.old_path, moved.path) == ("caf\\xe9.py", "d\\xe9j\\xe0.py")


def test_the_coding_line_forms_the_docs_name() -> None:
    body = 'x = "M\xfcller"\n'.encode("latin-1")
    for line in (
        b"# vim: set fileencoding=cp1252 :\n",
        b'<?xml version="1.0" encoding="ISO-8859-1"?>\n',
        b"// -*- coding: latin-1 -*-\n",
        b"#!/usr/bin/env python\n# coding=latin-1\n",
    ):
        assert decode_text(line + body)[0].endswith('x = "Müller"\n'), line
    assert decode_text(b'open(f, encoding="latin-1")\n' + body)[1] is None  # code, not a comment


def test_the_estimate_sizes_a_file_by_its_shown_name(repo: GitRepo) -> None:
    (repo.root / os.fsdecode(b"caf\xe9.py")).write_bytes(b"x = 1\n")
    sha = repo.commit("name")
    for ref in (sha, None):
        snapshot = Snapshot(repo_root=str(repo.root), ref=ref)
        assert file_sizes(snapshot, ["caf\\xe9.py"]) == {"caf\\xe9.py": 6}


def test_a_piped_diff_is_decoded_too(repo: GitRepo) -> None:
    repo.commit("init")
    diff = (
        b"diff --git a/caf\xe9.py b/caf\xe9.py\nnew file mode 100644\n--- /dev/null\n"
        b"+++ b/caf\xe9.py\n@@ -0,0 +1,2 @@\n+# coding: latin-1\n+x = 'M\xfcller'\n"
    )
    change = collect(repo, DiffMode.STDIN, stdin=diff, diff_source="-")
    [added] = change.files
    assert (added.path, _texts(added)) == ("caf\\xe9.py", ["# coding: latin-1", "x = 'Müller'"])
