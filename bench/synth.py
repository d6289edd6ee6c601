"""Synthetic repositories for benchmarks, built fast with `git fast-import`."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

EXTENSIONS = ("py", "go", "ts", "java", "rs", "md", "json", "c")


def _blob_lines(rng: random.Random, count: int) -> list[str]:
    return [
        f"value_{rng.randrange(10**6)} = compute({i}, {rng.random():.6f})" for i in range(count)
    ]


def _commit(
    out: list[bytes], ref: str, mark: int, parent: int | None, files: dict[str, str]
) -> None:
    out.append(f"commit {ref}\nmark :{mark}\n".encode())
    out.append(b"committer Bench <bench@example.invalid> 1700000000 +0000\n")
    out.append(b"data 5\nbench\n")
    if parent is not None:
        out.append(f"from :{parent}\n".encode())
    for path, text in files.items():
        data = text.encode()
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")


def make_repo(root: Path, files: int, seed: int = 7) -> tuple[str, str]:
    """A repo with a base commit of `files` files and a head commit changing every one."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    base: dict[str, str] = {}
    for i in range(files):
        path = f"pkg{i % 50:02d}/mod{i // 50:03d}/file_{i:05d}.{EXTENSIONS[i % len(EXTENSIONS)]}"
        base[path] = "\n".join(_blob_lines(rng, 40)) + "\n"
    head: dict[str, str] = {}
    for path, text in base.items():
        lines = text.splitlines()
        for _ in range(3):
            lines[rng.randrange(len(lines))] = f"changed_{rng.randrange(10**6)} = 1"
        lines.insert(rng.randrange(len(lines)), "inserted = True")
        head[path] = "\n".join(lines) + "\n"
    stream: list[bytes] = []
    _commit(stream, "refs/heads/main", 1, None, base)
    _commit(stream, "refs/heads/feature", 2, 1, head)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    return "main", "feature"


def make_small_change(root: Path) -> None:
    """A repo whose working tree has a 3-file change (two edits, one untracked file)."""
    root.mkdir(parents=True, exist_ok=True)
    run = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    (root / "app.py").write_text("def f(x):\n    return x\n")
    (root / "util.go").write_text("package util\n\nfunc F() int { return 1 }\n")
    run("add", "-A")
    run("-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "base")
    (root / "app.py").write_text("def f(x):\n    return x * 2\n")
    (root / "util.go").write_text("package util\n\nfunc F() int { return 2 }\n")
    (root / "new.ts").write_text("export const x: number = 1;\n")
