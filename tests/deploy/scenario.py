"""A repository with a release history, and the model settings a worker would have."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

BASE = '''"""Settings."""


def load(path):
    return {}
'''
RISKY = '''"""Settings."""


def load(path):
    handle = open(path)
    return parse(handle.read())


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines())
'''
SPLIT = {
    "severity": "high",
    "category": "correctness",
    "file": "app/settings.py",
    "existing_code": '    return dict(line.split("=", 1) for line in text.splitlines())',
    "title": "Lines without '=' crash parse",
    "problem": "ValueError on a line without '='",
    "evidence": "split result unpacked into pairs",
    "suggestion": "skip or report malformed lines",
    "confidence": 0.9,
}


def model_env(wire: WireServer, protocol: str = "openai") -> dict[str, str]:
    """The worker environment that names the model (the key included)."""
    return {
        "REVIEWFLOW_MODEL_PROTOCOL": protocol,
        "REVIEWFLOW_MODEL_NAME": "test-model",
        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url(protocol),
        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
    }


def use_model(monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> None:
    for name, value in model_env(wire).items():
        monkeypatch.setenv(name, value)


def origin(root: Path) -> tuple[GitRepo, Path]:
    """A working repository with `main` (one commit) and a bare copy to serve as the remote."""
    repo = GitRepo.init(root / "work")
    repo.write("app/settings.py", BASE)
    repo.commit("base")
    bare = root / "origin.git"
    repo.git("clone", "--bare", "--quiet", str(repo.root), str(bare))
    repo.git("remote", "add", "origin", str(bare))
    return repo, bare


def push(repo: GitRepo, *refs: str) -> None:
    repo.git("push", "--quiet", "--force", "origin", *refs)
