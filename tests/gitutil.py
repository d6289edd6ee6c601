"""Real Git repositories for tests (Git is never mocked)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class GitRepo:
    root: Path

    @classmethod
    def init(cls, root: Path) -> GitRepo:
        root.mkdir(parents=True, exist_ok=True)
        repo = cls(root)
        repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str, input: bytes | None = None) -> str:
        result = subprocess.run(
            ["git", *args],
            cwd=self.root,
            input=input,
            capture_output=True,
            check=True,
        )
        return result.stdout.decode("utf-8", "surrogateescape")

    def write(self, path: str, content: str | bytes) -> Path:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", newline="")
        return target

    def symlink(self, path: str, target: str) -> Path:
        link = self.root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
        return link

    def commit(self, message: str = "change", *paths: str) -> str:
        self.git("add", "-A", *paths)
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()
