"""`make docs-pictures`: what a review looks like, recorded from a real review of a small change
against the scripted model of the tests (no model, no network): the console report as SVG
(docs/assets/console-review.svg) and text (console-review.txt, which README.md quotes), the
live progress line half-way through a review of eight files, read from a pseudo-terminal
(progress.svg), a pull request as reviewflow leaves it (pull-request.png: the summary and the
inline comments it posted on the tests' stateful fake GitHub, rendered from their bodies), and
the
Prefect UI of the managed server the review ran on, screenshot in headless Chromium (Debian's
`chromium`): the review's flow run and its artifacts. Each artifact page must render the finding
(checked in the rendered page, not only through the API), so the script fails when one does not.
"""

from __future__ import annotations

import json
import os
import re
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
AFTER = (
    BEFORE
    + """

def check(token: str, stored: str) -> bool:
    if token == stored:
        return True
    return False
"""
)
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


SHOWN_REPO = "/home/developer/src/app"


def change(root: Path) -> None:
    from tests.gitutil import GitRepo

    repo = GitRepo.init(root)
    repo.write("app/session.py", BEFORE)
    repo.commit("base")
    repo.write("app/session.py", AFTER)
    repo.commit("check tokens")


def _env(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "REVIEWFLOW_HOME": str(work / "home"),
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }


def _reviewflow(work: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env=_env(work),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def record(work: Path) -> str:
    """The console report of the review, as the terminal gets it (ANSI colours)."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import TEST_KEY, WireServer

    change(work / "app")
    with WireServer() as wire:
        wire.respond("openai", ScriptedReviewer({"app/session.py": [FINDING]}))
        env = {
            **_env(work),
            "REVIEWFLOW_MODEL_NAME": "gpt-4o",
            "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
            "FORCE_COLOR": "1",
            "COLUMNS": "92",
        }
        args = ["review", "--commit", "HEAD", "--no-progress", "--no-warm"]
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=work / "app",
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 1:
        raise SystemExit(f"the review ended {done.returncode}, not 1:\n{done.stderr}")
    return shown_paths(done.stdout, work)


def shown_paths(out: str, work: Path) -> str:
    """The console output as a developer's would read: the reports in the default home
    (`~/.reviewflow/reports/<flattened repository path>/<review ID>/`), the repository in
    `~/src/app` (/home/developer/src/app)."""
    from reviewflow.report.location import flatten_repo_path

    out = out.replace(str(work / "home"), "~/.reviewflow")
    out = out.replace(flatten_repo_path(work / "app"), flatten_repo_path(SHOWN_REPO))
    return out.replace(str(work / "app"), "~/src/app")


def progress(work: Path) -> str:
    """The progress line as a terminal showed it half-way through a review of eight files, the
    model answering in 0.4 s with usage (a pseudo-terminal as stderr: it draws only there)."""
    import pty

    from bench.estimate import metered
    from tests.gitutil import GitRepo
    from tests.wire_server import TEST_KEY, Delay, WireServer

    repo = GitRepo.init(work / "eight")
    paths = [f"app/module_{n}.py" for n in range(8)]
    for path in paths:
        repo.write(path, BEFORE)
    repo.commit("base")
    for path in paths:
        repo.write(path, AFTER)
    repo.commit("check tokens")
    model = metered({path: [] for path in paths})
    with WireServer() as wire:
        wire.respond("openai", lambda record: Delay(0.4, model(record)))
        env = {
            **_env(work),
            "REVIEWFLOW_MODEL_NAME": "gpt-4o",
            "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
            "FORCE_COLOR": "1",
            "COLUMNS": "120",
        }
        master, slave = pty.openpty()
        args = ["review", "--commit", "HEAD", "--no-warm", "--concurrency", "2"]
        child = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *args, "--report-dir", str(work / "out8")],
            cwd=work / "eight",
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=slave,
        )
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        child.wait(timeout=300)
    frames = [f for f in drawn.decode(errors="replace").split("\r") if "4/8 files" in f]
    if not frames:
        raise SystemExit("no progress line at 4 of 8 files was drawn")
    return frames[-1].replace("\x1b[2K", "").replace("\n", "")


PAGE_STYLE = """
body { font: 14px/1.5 -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #1f2328;
       background: #fff; margin: 24px; width: 860px; }
h1 { font-size: 22px; font-weight: 400; margin: 0 0 16px; }
.card { border: 1px solid #d1d9e0; border-radius: 6px; margin: 0 0 16px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; color: #59636e; }
.head b { color: #1f2328; }
.body { padding: 8px 16px; }
table { border-collapse: collapse; } td, th { border: 1px solid #d1d9e0; padding: 4px 10px; }
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; font-size: 12px; }
pre { background: #f6f8fa; padding: 10px; border-radius: 6px; overflow: auto; }
"""


def pull_request(work: Path) -> str:
    """The page of a pull request reviewed with `--publish auto` on the fake GitHub: the summary
    comment and each inline comment, their bodies as reviewflow posted them, as HTML."""
    from html import escape

    from markdown_it import MarkdownIt

    from tests.flows.reviewer import ScriptedReviewer
    from tests.publish import fake_github
    from tests.publish.scenario import LEAK, NUMBER, PROJECT, SPLIT, GitHubSide, PullRequest
    from tests.wire_server import TEST_KEY, WireServer

    with fake_github.FakeGitHub() as github, WireServer() as wire:
        side = GitHubSide(github)
        pr = PullRequest.create(work / "pr", side)
        wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
        env = {
            **_env(work),
            **side.env(),
            "REVIEWFLOW_MODEL_NAME": "gpt-4o",
            "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
        }
        args = ["review", "--repo", str(pr.repo.root), "--publish", "auto", "--console", "off"]
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args, "--report-dir", str(work / "pr-out")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 1:
            raise SystemExit(f"the pull request's review ended {done.returncode}:\n{done.stderr}")
        [summary] = side.summaries()
        threads = github.threads(NUMBER, repo=PROJECT)
    if len(threads) != 2:
        raise SystemExit(f"{len(threads)} inline comments posted, not 2")

    # GitHub's Markdown as far as the comments use it: CommonMark (fenced code, HTML such as
    # <details>) with tables and strikethrough; markdown-it-py is pinned in the dev extra.
    render = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render

    def card(head: str, body: str) -> str:
        html = render(body)
        return (
            f'<div class="card"><div class="head">{head}</div><div class="body">{html}</div></div>'
        )

    bot = "<b>reviewflow[bot]</b> commented"
    cards = [card(bot, summary)]
    for thread in threads:
        lines = (
            f"lines {thread.start_line}–{thread.line}"
            if thread.start_line
            else f"line {thread.line}"
        )
        where = f"<b>reviewflow[bot]</b> on <code>{escape(thread.path)}</code> {lines}"
        cards.append(card(where, thread.comments[0].body))
    title = (
        f"<h1>Read settings from the environment <span style='color:#59636e'>#{NUMBER}</span></h1>"
    )
    return (
        f"<html><head><style>{PAGE_STYLE}</style></head><body>{title}{''.join(cards)}</body></html>"
    )


# What each artifact's rendered page must show: the finding in the table, the gate in the summary.
SHOWS = {"table": "Session token compared with ==", "markdown": "Quality gate failed"}
CHROMIUM = (
    "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync "
    "--window-size=1400,900 --virtual-time-budget=15000"
).split()


def _browser(work: Path, *args: str) -> str:
    profile = f"--user-data-dir={work / 'chromium'}"
    done = subprocess.run(
        [*CHROMIUM, profile, *args], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def _api(url: str, path: str, body: dict[str, object]) -> list[dict[str, str]]:
    import urllib.request

    request = urllib.request.Request(
        url + "/api" + path, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        found: list[dict[str, str]] = json.load(answer)
    return found


def prefect_ui(work: Path, assets: Path) -> None:
    """Screenshots of the review's flow run and artifacts on the managed server it used."""
    status = _reviewflow(work, "server", "status")
    url = re.search(r"open (http://127\.0\.0\.1:\d+)", status)
    if url is None:
        raise SystemExit(f"no managed server after the review:\n{status}")
    base = url.group(1)
    try:
        run = _api(base, "/flow_runs/filter", {"limit": 1, "sort": "START_TIME_DESC"})[0]
        _browser(
            work,
            f"--screenshot={assets / 'prefect-flow-run.png'}",
            f"{base}/runs/flow-run/{run['id']}",
        )
        artifacts = _api(base, "/artifacts/filter", {"limit": 10})
        for artifact in artifacts:
            page = f"{base}/artifacts/artifact/{artifact['id']}"
            dom = _browser(work, "--dump-dom", page)
            if SHOWS[artifact["type"]] not in dom:
                raise SystemExit(f"the {artifact['type']} artifact's page shows no finding: {page}")
            shot = assets / f"prefect-artifact-{artifact['type']}.png"
            _browser(work, f"--screenshot={shot}", page)
    finally:
        _reviewflow(work, "server", "stop", "--force")


def console_pictures(ansi: str, assets: Path) -> None:
    """console-review.svg and console-review.txt (README.md quotes the text) from the output."""
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=92, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(Text.from_ansi(ansi))
    (assets / "console-review.svg").write_text(console.export_svg(title="reviewflow review"))
    (assets / "console-review.txt").write_text(Text.from_ansi(ansi).plain)


def main() -> None:
    from rich.console import Console
    from rich.text import Text

    assets = ROOT / "docs" / "assets"
    assets.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rf-pictures-") as tmp:
        ansi = record(Path(tmp))
        prefect_ui(Path(tmp), assets)
        line = progress(Path(tmp))
        page = Path(tmp) / "pull-request.html"
        page.write_text(pull_request(Path(tmp)))
        shot = assets / "pull-request.png"
        _browser(Path(tmp), f"--screenshot={shot}", "--window-size=910,990", page.as_uri())
    console_pictures(ansi, assets)
    console = Console(record=True, width=110, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(Text.from_ansi(line))
    (assets / "progress.svg").write_text(console.export_svg(title="reviewflow review (stderr)"))
    print(Text.from_ansi(ansi).plain)


if __name__ == "__main__":
    main()
