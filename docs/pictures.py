"""`make docs-pictures`: the console report as it looks, recorded from a real review of a small
change against the scripted model of the tests (no model, no network), saved as SVG
(docs/assets/console-review.svg) and as text (docs/assets/console-review.txt, which README.md
quotes)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BEFORE = '''"""Sessions: issue and check tokens."""

import secrets


def issue() -> str:
    return secrets.token_hex(16)
'''
AFTER = BEFORE + '''

def check(token: str, stored: str) -> bool:
    if token == stored:
        return True
    return False
'''
FINDING = {
    "severity": "high",
    "category": "security",
    "existing_code": "    if token == stored:",
    "title": "Session token compared with == (timing attack)",
    "problem": "== on secrets returns as soon as a character differs, so the time it takes "
    "tells an attacker how much of a guessed token is right.",
    "evidence": "if token == stored:",
    "suggestion": "Compare with hmac.compare_digest(token, stored).",
    "confidence": 0.9,
}


def change(root: Path) -> None:
    from tests.gitutil import GitRepo

    repo = GitRepo.init(root)
    repo.write("app/session.py", BEFORE)
    repo.commit("base")
    repo.write("app/session.py", AFTER)
    repo.commit("check tokens")


def record(work: Path) -> str:
    """The console report of the review, as the terminal gets it (ANSI colours)."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import TEST_KEY, WireServer

    change(work / "app")
    with WireServer() as wire:
        wire.respond("openai", ScriptedReviewer({"app/session.py": [FINDING]}))
        env = {
            **os.environ,
            "REVIEWFLOW_HOME": str(work / "home"),
            "REVIEWFLOW_MODEL_NAME": "gpt-4o",
            "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
            "FORCE_COLOR": "1",
            "COLUMNS": "92",
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        args = ["review", "--commit", "HEAD", "--no-progress", "--no-server-reuse", "--no-warm"]
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args, "--report-dir", str(work / "out")],
            cwd=work / "app",
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 1:
        raise SystemExit(f"the review ended {done.returncode}, not 1:\n{done.stderr}")
    out = done.stdout.replace(str(work / "out"), "~/.reviewflow/reports/app/20261203T101512Z")
    return out.replace(str(work / "app"), "~/src/app")


def main() -> None:
    from rich.console import Console
    from rich.text import Text

    with tempfile.TemporaryDirectory(prefix="rf-pictures-") as tmp:
        ansi = record(Path(tmp))
    console = Console(record=True, width=92, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(Text.from_ansi(ansi))
    assets = ROOT / "docs" / "assets"
    assets.mkdir(exist_ok=True)
    (assets / "console-review.svg").write_text(console.export_svg(title="reviewflow review"))
    (assets / "console-review.txt").write_text(Text.from_ansi(ansi).plain)
    print(Text.from_ansi(ansi).plain)


if __name__ == "__main__":
    main()
