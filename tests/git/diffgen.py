"""A seeded generator of diffs in the shapes Git and GNU diff write, and of their corruptions.

Each generated diff knows what it says (path -> added/removed, None for binary) and the
strip level (`git apply -p`) its prefixes call for.
"""

from __future__ import annotations

import base64
import random
import re
import zlib
from dataclasses import dataclass, field

NAMES = [
    "app.py",
    "src/mod.py",
    "docs/read me.md",
    "tab\there.txt",
    'quo"te.txt',
    "back\\slash.c",
    "ünï/cödé.txt",
    "x b/y z.txt",
    "-dash.txt",
    "end space ",
    "deep/er/path/file.rs",
    "a/b.txt",
    "b/a.txt",
    "dev/null",
]
_ESCAPES = {"\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r"}
_ESCAPES |= {'"': '"', "\\": "\\"}
_ADDED = ["x", "[-y-]", "\\ z", "", "\x1b[m"]
KINDS = ["modify", "modify", "new", "delete", "rename", "copy", "mode", "binary", "gitbinary"]
STAMP = "2024-05-06 07:08:09.123456789 +0200"


@dataclass
class Generated:
    """One generated diff and what it says."""

    text: str
    strip: int
    counts: dict[str, tuple[int, int] | None] = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8", "surrogateescape")


def git_quote(name: str, quote_path: bool = True) -> str:
    """Git's C-style quoting of a name, only when it needs it."""
    raw = name.encode("utf-8")
    out: list[str] = []
    quoted = False
    for byte in raw:
        char = chr(byte)
        if char in _ESCAPES:
            out.append("\\" + _ESCAPES[char])
        elif byte < 0x20 or byte == 0x7F or (byte >= 0x80 and quote_path):
            out.append(f"\\{byte:03o}")
        else:
            out.append(char if byte < 0x80 else bytes([byte]).decode("latin-1"))
            continue
        quoted = True
    if not quoted:
        return name
    return '"' + "".join(out) + '"'


def _hunks(rng: random.Random, new: bool = False, gone: bool = False) -> tuple[str, int, int]:
    """Hunks with consistent headers: (text, added, removed)."""
    if new or gone:
        count = rng.randint(1, 4)
        sign = "+" if new else "-"
        body = "".join(f"{sign}line {i}\n" for i in range(count))
        header = f"@@ -0,0 +1,{count} @@\n" if new else f"@@ -1,{count} +0,0 @@\n"
        return header + body, count if new else 0, 0 if new else count
    text, added, removed, old_no = "", 0, 0, 1
    for _ in range(rng.randint(1, 3)):
        lines: list[str] = []
        lead, trail = rng.randint(0, 3), rng.randint(0, 3)
        dels, adds = rng.randint(0, 3), rng.randint(0, 3)
        if dels + adds == 0:
            adds = 1
        lines += [f" ctx {old_no + i}\n" for i in range(lead)]
        lines += [f"-old {i}{rng.choice(['', chr(13)])}\n" for i in range(dels)]
        lines += [f"+new {i} {rng.choice(_ADDED)}\n" for i in range(adds)]
        lines += ["\n" if rng.random() < 0.2 else f" ctx {i}\n" for i in range(trail)]
        old_count, new_count = lead + dels + trail, lead + adds + trail
        old_start = old_no if old_count else old_no - 1
        text += f"@@ -{old_start},{old_count} +{old_no},{new_count} @@ def f():\n" + "".join(lines)
        if rng.random() < 0.15:
            text += "\\ No newline at end of file\n"
        added, removed = added + adds, removed + dels
        old_no += old_count + rng.randint(5, 20)
    return text, added, removed


def _binary_patch(rng: random.Random) -> str:
    """A `GIT binary patch` block with real deflated, base85-encoded data."""
    blocks = []
    for _ in range(2):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))
        packed = zlib.compress(raw)
        rows = []
        for i in range(0, len(packed), 52):
            part = packed[i : i + 52]
            letter = (
                chr(ord("A") + len(part) - 1) if len(part) <= 26 else chr(ord("a") + len(part) - 27)
            )
            rows.append(letter + base64.b85encode(part, pad=True).decode() + "\n")
        blocks.append(f"literal {len(raw)}\n" + "".join(rows) + "\n")
    return "GIT binary patch\n" + "".join(blocks)


def _git_file(rng: random.Random, name: str, prefixes: tuple[str, str], out: Generated) -> str:
    src, dst = prefixes
    old, new = git_quote(src + name), git_quote(dst + name)
    kind = rng.choice(
        ["modify", "modify", "new", "delete", "rename", "mode", "binary", "gitbinary"]
    )
    head = f"diff --git {old} {new}\n"
    tab = "\t" if " " in name and not old.startswith('"') else ""
    if kind in ("rename", "copy"):
        target = "moved/" + name
        new = git_quote(dst + target)
        head = f"diff --git {old} {new}\nsimilarity index 87%\n"
        head += f"{kind} from {git_quote(name)}\n{kind} to {git_quote(target)}\n"
        tab = "\t" if " " in target and not new.startswith('"') else ""
        name = target
    if kind == "mode":
        out.counts[name] = (0, 0)
        return head + "old mode 100644\nnew mode 100755\n"
    if kind in ("binary", "gitbinary"):
        out.counts[name] = None
        head += "index 1234567..89abcde 100644\n"
        if kind == "binary":
            return head + f"Binary files {old} and {new} differ\n"
        return head + _binary_patch(rng)
    minus, plus = f"{old}{tab}", f"{new}{tab}"
    if kind == "new":
        head += "new file mode 100644\nindex 0000000..89abcde\n"
        minus = "/dev/null"
    elif kind == "delete":
        head += "deleted file mode 100644\nindex 1234567..0000000\n"
        plus = "/dev/null"
    else:
        head += "index 1234567..89abcde 100644\n"
    body, added, removed = _hunks(rng, new=kind == "new", gone=kind == "delete")
    out.counts[name] = (added, removed)
    return head + f"--- {minus}\n+++ {plus}\n" + body


def _stamp(rng: random.Random) -> str:
    return rng.choice(["\t", "\t", " ", "  ", "        "]) + STAMP


def _plain_file(rng: random.Random, name: str, prefixes: tuple[str, str], out: Generated) -> str:
    src, dst = prefixes
    kind = rng.choice(["modify", "modify", "new", "delete"])
    minus, plus = src + name + _stamp(rng), dst + name + _stamp(rng)
    epoch = "\t1970-01-01 00:00:00.000000000 +0000"
    if kind == "new":
        minus = rng.choice(["/dev/null" + _stamp(rng), src + name + epoch])
    elif kind == "delete":
        plus = rng.choice(["/dev/null" + _stamp(rng), dst + name + epoch])
    body, added, removed = _hunks(rng, new=kind == "new", gone=kind == "delete")
    out.counts[name] = (added, removed)
    head = f"diff -u {src}{name} {dst}{name}\n" if rng.random() < 0.3 else ""
    return head + f"--- {minus}\n+++ {plus}\n" + body


def _plain_names(rng: random.Random, count: int) -> list[str]:
    """Names a plain diff can carry: no leading/trailing space, tab only before a timestamp."""
    pool = [n for n in NAMES if not n.endswith(" ") and '"' not in n]
    return rng.sample(pool, count)


def generate(rng: random.Random) -> Generated:
    """One diff: git style (a/ b/, custom prefixes, --no-prefix) or plain `diff -u`."""
    style = rng.choice(["git", "git", "custom", "noprefix", "plain", "plain-p0"])
    count = rng.randint(1, 4)
    prefixes = {
        "git": ("a/", "b/"),
        "custom": ("old/", "new/"),
        "noprefix": ("", ""),
        "plain": ("orig/", "work/"),
        "plain-p0": ("", ""),
    }[style]
    out = Generated("", 0 if style in ("noprefix", "plain-p0") else 1)
    parts = []
    if rng.random() < 0.3:
        parts.append("From 0123 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n")
    if style.startswith("plain"):
        names = _plain_names(rng, count)
        if style == "plain-p0":
            names = [n for n in names if "/" not in n] or ["app.py"]
        parts += [_plain_file(rng, name, prefixes, out) for name in names]
    else:
        names = rng.sample(NAMES, count)
        if style == "noprefix":
            names = [n for n in names if "/" not in n and not n.endswith(" ")] or ["app.py"]
        parts += [_git_file(rng, name, prefixes, out) for name in names]
    if rng.random() < 0.3:
        parts.append("-- \n2.39.5\n")
    out.text = "".join(parts)
    return out


COLOUR = ["\x1b[1m", "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[m"]


def corrupt(rng: random.Random, text: str) -> str:
    """One to three damages: a line dropped, duplicated, cut, swapped; a byte flipped; colour;
    TABs become spaces; or the whole text gets CRLF line ends (a Windows editor)."""
    if rng.random() < 0.1:
        return text.replace("\n", "\r\n")
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(7)
        i = rng.randrange(len(lines))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif op == 3 and lines[i]:
            pos = rng.randrange(len(lines[i]))
            char = chr(rng.choice([*range(32, 127), 9, 13, 0, 0xE9]))
            lines[i] = lines[i][:pos] + char + lines[i][pos + 1 :]
        elif op == 4:
            lines[i] = rng.choice(COLOUR) + lines[i] + "\x1b[m"
        elif op == 5 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 6:
            lines[i] = lines[i].replace("\t", " " * rng.randint(1, 4))
            number = str(rng.choice([0, 1, 2, 7, 99]))
            lines[i] = re.sub("[0-9]+", number, lines[i], count=1)
        if not lines:
            lines = [""]
    return "\n".join(lines)


def colourize(text: str) -> str:
    """What `git diff --color=always` writes: headers bold, hunk headers cyan, lines red/green."""
    out = []
    for line in text.split("\n"):
        if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file")):
            out.append(f"\x1b[1m{line}\x1b[m")
        elif line.startswith("@@"):
            out.append(f"\x1b[36m{line}\x1b[m")
        elif line.startswith("+"):
            out.append(f"\x1b[32m{line}\x1b[m")
        elif line.startswith("-"):
            out.append(f"\x1b[31m{line}\x1b[m")
        else:
            out.append(line)
    return "\n".join(out)
