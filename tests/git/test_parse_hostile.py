"""Hostile diffs (`--diff -`): every input either parses or raises DiffParseError."""

from __future__ import annotations

import os
import random
import re
import time

import pytest

from reviewflow.errors import DiffParseError
from reviewflow.git.parse import iter_lines, parse_lines, parse_unified_diff

HEAD = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (HEAD + "@@ -1 +" + "9" * 5000 + " @@\n+x\n", 4, "bad hunk header"),
        (HEAD + "@@ -" + "1" * 11 + " +1 @@\n-x\n+y\n", 4, "bad hunk header"),
        (HEAD + "@@ -1,4000000000 +1 @@\n-x\n+y\n", 6, "hunk truncated at end of input"),
        ("diff --git a/x\0y b/x\0y\n--- a/x\0y\n+++ b/x\0y\n", 1, "NUL byte in a file name"),
        ('diff --git "a/x\\000y" "b/x\\000y"\nnew file mode 100644\n', 1, "NUL byte"),
        ("--- a/x\0y\n+++ b/x\0y\n@@ -1 +1 @@\n-x\n+y\n", 1, "NUL byte in a file name"),
        ('diff --git a/x b/y\nrename from "x\\000"\nrename to y\n', 1, "NUL byte"),
        ("diff --git \n--- \n+++ \n@@ -1 +1 @@\n-x\n+y\n", 1, "cannot tell the file name"),
        ("diff --git \nnew file mode 100644\n", 1, "cannot tell the file name"),
        ("Binary files  and  differ\n", 1, "no file header found"),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n", 1, "cannot tell the file name"),
    ],
)
def test_hostile_input_is_a_parse_error(text: str, line: int, message: str) -> None:
    with pytest.raises(DiffParseError, match=rf"^malformed diff at line {line}: {message}"):
        parse_unified_diff(text.encode("utf-8"))


def test_huge_counts_cost_only_the_input() -> None:
    text = HEAD + "@@ -1,4000000000 +1,4000000000 @@\n" + " x\n" * 100_000
    start = time.perf_counter()
    with pytest.raises(DiffParseError, match="hunk truncated at end of input"):
        parse_unified_diff(text)
    assert time.perf_counter() - start < 5


def test_non_utf8_names_are_kept_as_their_bytes() -> None:
    raw = b"diff --git a/caf\xe9.py b/caf\xe9.py\n--- a/caf\xe9.py\n+++ b/caf\xe9.py\n"
    (diff,) = parse_unified_diff(raw + b"@@ -1 +1 @@\n-x\n+y\n")
    assert os.fsencode(diff.path) == b"caf\xe9.py" and diff.added == 1


@pytest.mark.parametrize("value", ["\u00b2%", "9" * 5000 + "%", "101%", "90"])
def test_odd_similarity_is_ignored(value: str) -> None:
    text = f"diff --git a/x b/y\nsimilarity index {value}\nrename from x\nrename to y\n"
    (diff,) = parse_unified_diff(text)
    assert (diff.path, diff.old_path, diff.similarity) == ("y", "x", None)


SEED = (
    b"diff --git a/app.py b/app.py\nindex 7d4290a..407de30 100644\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1,3 +1,4 @@ def f():\n one\n-two\n+TWO\n+2b\n three\n\\ No newline at end of file\n"
    b'diff --git "a/q\\303\\251 x" "b/q\\303\\251 x"\nsimilarity index 90%\n'
    b'rename from "q\\303\\251 x"\nrename to y\nold mode 100644\nnew mode 100755\n'
    b"diff --git a/bin b/bin\nnew file mode 100644\nindex 0000000..1909429\n"
    b"Binary files /dev/null and b/bin differ\n"
    b"diff --git a/p.bin b/p.bin\nindex 1..2 100644\nGIT binary patch\nliteral 7\n"
    b"OcmeAS@N;KiVg>*RPXTlQ\n\nliteral 6\nNcmeAS@N;Ki1ONuw0dN2S\n\n"
    b"--- old/p.c\t2024-01-01\n+++ new/p.c\t2024-01-02\n@@ -0,0 +1 @@\n+x\n"
    b"Binary files a/z and b/z differ\n"
)
TOKENS = [
    b"\0",
    b"\xff",
    b"\xc3",
    b'"',
    b"\\",
    b"\\000",
    b"\\777",
    b"\r",
    b"\t",
    b"\n",
    b" ",
    b"+",
    b"-",
    b",",
    b"9" * 5000,
    b"4000000000",
    b"@@ ",
    b"@@@ ",
    b"@@ -1 +1 @@\n",
    b"diff --git ",
    b"diff --git \n",
    b"--- ",
    b"+++ ",
    b"/dev/null",
    b"a/",
    b"b/",
    b"similarity index \xc2\xb2%\n",
    b"rename from ",
    b"copy to ",
    b"new file mode ",
    b"GIT binary patch\n",
    b"literal 0\n",
    b"Binary files ",
    b" and ",
    b" differ",
]


NUMBERS = [b"", b"0", b"-1", b"01", b"4000000000", b"9" * 5000, b"\xd9\xa1", b"1 1"]


def _renumber(rng: random.Random, data: bytearray) -> bytearray:
    """Replace one run of digits (a line number, count, mode, percentage) with an odd number."""
    runs = list(re.finditer(rb"[0-9]+", data))
    if not runs:
        return data
    run = rng.choice(runs)
    data[run.start() : run.end()] = rng.choice(NUMBERS)
    return data


def _mutate(rng: random.Random, data: bytes) -> bytes:
    """Up to four random edits: cut, insert a token, flip a byte, renumber, copy or drop a line."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(out) + 1)
        if op == 0:
            del out[pos : pos + rng.randint(1, 20)]
        elif op == 1:
            out[pos:pos] = rng.choice(TOKENS)
        elif op == 2 and out:
            out[min(pos, len(out) - 1)] = rng.randrange(256)
        elif op == 5:
            out = _renumber(rng, out)
        else:
            lines = bytes(out).split(b"\n")
            line = rng.randrange(len(lines))
            if op == 3:
                lines.insert(rng.randrange(len(lines)), lines[line])
            else:
                del lines[line]
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def _outcome(data: bytes, cut: int) -> str:
    """Parse `data` whole and streamed in `cut`-byte chunks: both agree, or both refuse it."""
    outcomes = []
    chunks = (data[i : i + cut] for i in range(0, len(data), cut))
    for run in (lambda: parse_unified_diff(data), lambda: parse_lines(iter_lines(chunks))):
        try:
            run()
            outcomes.append("parsed")
        except DiffParseError as err:
            assert str(err).startswith("malformed diff at line ")
            assert "\n" not in str(err)
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1], data
    return outcomes[0]


def test_random_mutations_parse_or_raise_diff_parse_error() -> None:
    parse_unified_diff(SEED)  # the seed itself is valid
    rng = random.Random(20261130)
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(3000):
        data = _mutate(rng, SEED)
        outcomes[_outcome(data, rng.randrange(1, 64))] += 1
    assert outcomes["parsed"] > 250 and outcomes["refused"] > 250, outcomes
