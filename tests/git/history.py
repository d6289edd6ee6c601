"""A deterministic random history, written with one `git fast-import` (no working tree)."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

ODD_NAMES = [
    b"sp ace.txt",
    b"tab\there.txt",
    b'quo"te.py',
    b"back\\slash.c",
    b"\xc3\xbcn\xc3\xaf c\xc3\xb6d\xc3\xa9.py",
    b"\xe6\x97\xa5\xe6\x9c\xac/\xe8\xaa\x9e.md",
    b"new\nline.txt",
    b"-dash.txt",
    b"x b/y z.txt",
    b"a/b c/d.go",
    b"trail .txt",
    b"bad\xffbyte.txt",
    b"dir with space/f.rs",
]
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "", "  indent", "}"]


def quote(path: bytes) -> bytes:
    """C-style quoting that fast-import reads back to the same bytes."""
    out = bytearray(b'"')
    for byte in path:
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte >= 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


class _History:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.files: dict[bytes, tuple[str, bytes]] = {}
        self.counter = 0
        self.out = bytearray()

    def text(self) -> bytes:
        rng = self.rng
        lines = [rng.choice(WORDS) + str(rng.randrange(40)) for _ in range(rng.randrange(4, 30))]
        eol = b"\r\n" if rng.random() < 0.1 else b"\n"
        data = eol.join(w.encode() for w in lines)
        return data if rng.random() < 0.15 else data + eol

    def content(self) -> tuple[str, bytes]:
        roll = self.rng.random()
        if roll < 0.08:
            return "100644", bytes(self.rng.randrange(256) for _ in range(64)) + b"\0"
        if roll < 0.13:
            return "100644", b""
        if roll < 0.2:
            return "120000", b"../target/" + str(self.rng.randrange(9)).encode()
        return ("100755" if roll < 0.27 else "100644"), self.text()

    def new_name(self) -> bytes:
        self.counter += 1
        if self.rng.random() < 0.3:
            base = self.rng.choice(ODD_NAMES)
            return b"%d-%s" % (self.counter, base) if base in self.files else base
        return b"src/f%d.%s" % (self.counter, self.rng.choice([b"py", b"c", b"txt"]))

    def edit(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        for _ in range(self.rng.randrange(1, 4)):
            at = self.rng.randrange(len(lines) + 1)
            op = self.rng.random()
            if op < 0.4 and at < len(lines):
                lines[at] = b"changed %d" % self.rng.randrange(1000)
            elif op < 0.7 and at < len(lines) and len(lines) > 2:
                del lines[at]
            else:
                lines.insert(at, b"inserted %d" % self.rng.randrange(1000))
        return b"\n".join(lines)

    def modify(self, path: bytes, mode: str, data: bytes) -> None:
        self.files[path] = (mode, data)
        self.out += b"M %s inline %s\ndata %d\n%s\n" % (mode.encode(), quote(path), len(data), data)

    def step(self) -> None:
        rng = self.rng
        texts = [p for p, (m, d) in self.files.items() if m != "120000" and b"\0" not in d and d]
        op = rng.random()
        if op < 0.3 or len(self.files) < 4:
            self.modify(self.new_name(), *self.content())
        elif op < 0.5 and texts:
            path = rng.choice(texts)
            self.modify(path, self.files[path][0], self.edit(self.files[path][1]))
        elif op < 0.6:
            path = rng.choice(sorted(self.files))
            del self.files[path]
            self.out += b"D %s\n" % quote(path)
        elif op < 0.72 and texts:
            old, new = rng.choice(texts), self.new_name()
            self.files[new] = self.files.pop(old)
            self.out += b"R %s %s\n" % (quote(old), quote(new))
            if rng.random() < 0.5:
                self.modify(new, self.files[new][0], self.edit(self.files[new][1]))
        elif op < 0.82 and texts:
            src, dst = rng.choice(texts), self.new_name()
            self.files[dst] = self.files[src]
            self.out += b"C %s %s\n" % (quote(src), quote(dst))
            self.modify(src, self.files[src][0], self.edit(self.files[src][1]))
        elif op < 0.92 and texts:
            path = rng.choice(texts)
            mode, data = self.files[path]
            self.modify(path, "100644" if mode == "100755" else "100755", data)
        else:
            path = rng.choice(sorted(self.files))
            self.modify(path, *self.content())

    def commit(self, number: int) -> None:
        message = b"commit %d" % number
        self.out += b"commit refs/heads/main\ncommitter T <t@e.invalid> %d +0000\n" % (
            1_700_000_000 + number
        )
        self.out += b"data %d\n%s\n" % (len(message), message)
        for _ in range(self.rng.randrange(1, 6)):
            self.step()
        self.out += b"\n"


def build_history(root: Path, commits: int, seed: int) -> None:
    """Create a bare-bones repository at `root` holding `commits` random commits on main."""
    history = _History(seed)
    for number in range(commits):
        history.commit(number)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=root, input=bytes(history.out), check=True
    )
