"""Release-branch scale: whole reviews of N changed files (`bench/synth.py` repositories) against
the scripted model, as a user runs them (`python -m flows.review`, handed to the warm process,
through the managed local Prefect server), and what they cost every process.

Per size (`--files 100 1000 5000`), model answer time (`--latency`, 0 and 2 s) and concurrency
(`--concurrency`), with the context pack on or off (`--context on off`), in a fresh reviewflow
home whose server and warm process an untimed 3-file review starts first:
- wall of the review, per changed file and per reviewed file;
- CPU (user + system) of every process: the review (the warm process's forked child, from its
  `warm.log` line, git's subprocesses included), the managed server (from /proc, from before
  the review until it has recorded the review's last task run), the CLI that hands the review
  over, and the scripted model (its own process);
- peak RSS of the review child (its log line) and of the server (VmHWM);
- the Prefect database's size after the run, the task runs the review created per model
  request, the artifacts' count and size (read from the database itself);
- the model span (first request's arrival to last answer) against the ideal at that
  concurrency, when the model answers after a latency.
One file in ten gets a finding (on its added line), so a 5,000-file review reports hundreds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from synth import make_repo, make_small_change  # noqa: E402

from flows.local.control import stop_server  # noqa: E402
from flows.local.process import read_state  # noqa: E402
from flows.local.settings import prefect_home  # noqa: E402
from flows.local.warm.sockets import install_key  # noqa: E402
from flows.local.warm.state import read_warm, running_warm  # noqa: E402

CODE = (".py", ".go", ".ts", ".java", ".rs", ".c")


def _finding(path: str) -> dict[str, object]:
    return {
        "severity": "medium",
        "category": "correctness",
        "file": path,
        "existing_code": "inserted = True",
        "title": f"Flag set unconditionally in {Path(path).stem}",
        "problem": "the flag is set whatever the input",
        "evidence": "inserted = True on an added line",
        "suggestion": "set it where the condition holds",
        "confidence": 0.9,
    }


def serve_model(latency: float, paths: list[str], every: int = 10, host: str = "127.0.0.1") -> None:
    """The scripted model, in a child process, on `host`: prints its base URL, then answers
    each line on stdin with the arrival times of the requests so far."""
    from tests.flows.reviewer import ScriptedReviewer
    from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

    arrivals: list[float] = []
    planned = {p: [_finding(p)] if i % every == 0 else [] for i, p in enumerate(paths)}

    class Timed(ScriptedReviewer):
        def __call__(self, record: RecordedRequest) -> Reply:
            arrivals.append(time.time())
            answer = super().__call__(record)
            return Delay(latency, answer) if latency else answer

    with WireServer(host) as wire:
        wire.respond("openai", Timed(planned))
        print(wire.base_url("openai"), flush=True)
        for _ in sys.stdin:
            usage = os.times()
            cpu = usage.user + usage.system
            print(json.dumps({"arrivals": arrivals, "cpu": cpu}), flush=True)


class Model:
    """The scripted model's process."""

    def __init__(
        self, latency: float, paths: list[str], work: Path, every: int = 10, host: str = ""
    ) -> None:
        listing = work / "paths.json"
        listing.write_text(json.dumps(paths))
        command = [sys.executable, __file__, "--model", str(listing), "--latency", str(latency)]
        command += ["--finding-every", str(every), *(["--host", host] if host else [])]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def stats(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        stats: dict[str, Any] = json.loads(self.process.stdout.readline())
        return stats

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _warm_lines(home: Path) -> list[str]:
    phome = prefect_home(home)
    state = read_warm(phome, install_key())
    if state is None or state not in running_warm(phome):
        return []
    return [line for line in Path(state.log).read_text().splitlines() if "review pid" in line]


def _wait_warm(home: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        phome = prefect_home(home)
        state = read_warm(phome, install_key())
        running = state is not None and state in running_warm(phome)
        if running and state is not None and "serving on" in Path(state.log).read_text():
            return
        time.sleep(0.2)
    raise SystemExit("no warm process started")


def _task_runs(conn: sqlite3.Connection) -> tuple[str, int]:
    """The last flow run, and how many task runs the server has recorded for it."""
    flow = conn.execute("select id from flow_run order by created desc limit 1").fetchone()[0]
    tasks = conn.execute("select count(*) from task_run where flow_run_id = ?", (flow,))
    return flow, tasks.fetchone()[0]


def _settled(home: Path, quiet: float = 15.0) -> None:
    """Until the server has recorded every task run the review reported (it records them from
    events, after the review ends): the count unchanged for `quiet` seconds."""
    db = next(prefect_home(home).rglob("*.db"))
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            count = _task_runs(conn)[1]
        if count != last:
            last, since = count, time.monotonic()
        time.sleep(0.5)


def _database_mb(home: Path) -> float:
    db = next(prefect_home(home).rglob("*.db"))
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20  # with its -wal


def _database(home: Path) -> dict[str, Any]:
    """The Prefect database's size, and what the review left in it."""
    db = next(prefect_home(home).rglob("*.db"))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        flow, task_runs = _task_runs(conn)
        art = conn.execute(
            "select count(*), coalesce(sum(length(data)) + sum(length(description)), 0) "
            "from artifact where flow_run_id = ?",
            (flow,),
        ).fetchone()
        tables = [
            row[0] for row in conn.execute("select name from sqlite_master where type='table'")
        ]
        rows = {t: conn.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables}
        try:
            pages = conn.execute("select name, sum(pgsize) from dbstat group by name").fetchall()
        except sqlite3.OperationalError:  # an SQLite built without dbstat
            pages = []
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))  # with its -wal
    return {"db_mb": size / 2**20, "task_runs": task_runs, "artifacts": art[0],
            "artifact_kb": art[1] / 1024, "rows": {t: n for t, n in rows.items() if n},
            "table_mb": {name: b / 2**20 for name, b in pages if b > 2**16}}  # fmt: skip


def run(
    files: int, latency: float, concurrency: int, context: str = "on", every: int = 10
) -> Result:
    from tests.wire_server import TEST_KEY

    work = Path(tempfile.mkdtemp(prefix=f"rf-scale-{files}-"))
    home, repo = work / "home", work / "repo"
    base, head = make_repo(repo, files)
    paths = sorted(
        line for line in subprocess.run(
            ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", head],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines() if line.endswith(CODE)
    )  # fmt: skip
    model = Model(latency, paths, work, every)
    env = {**os.environ, "REVIEWFLOW_HOME": str(home), "PYTHONPATH": str(ROOT),
           "REVIEWFLOW_MODEL_NAME": "bench-model", "REVIEWFLOW_MODEL_ENDPOINT": model.url,
           "REVIEWFLOW_MODEL_API_KEY": TEST_KEY}  # fmt: skip
    env.pop("PREFECT_API_URL", None)
    review = [sys.executable, "-m", "flows.review", "--console", "off", "--no-progress"]
    try:
        make_small_change(work / "small")
        subprocess.run([*review, "--repo", str(work / "small")], env=env,
                       stdout=subprocess.DEVNULL, check=False)  # fmt: skip
        _wait_warm(home)
        server = read_state(prefect_home(home))
        assert server is not None
        server_cpu, seen = _proc_cpu(server.pid), len(_warm_lines(home))
        db_before_mb = _database_mb(home)
        before = model.stats()
        args = [*review, "--repo", str(repo), "--from", base, "--to", head, "--no-cache"]
        args += ["--concurrency", str(concurrency), "--report-dir", str(work / "out")]
        args += ["--context", context]
        start = time.perf_counter()
        cli = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(cli.pid, 0)
        wall = time.perf_counter() - start
        after = model.stats()
        _settled(home)
        server_cpu = _proc_cpu(server.pid) - server_cpu
        server_rss = _peak_rss_mb(server.pid)
        child = _warm_lines(home)[seen:]
        report = json.loads((work / "out" / "review-report.json").read_text())
        stop_server(home)  # first: the database is read whole, as the server left it
        database = _database(home)
    finally:
        model.close()
        stop_server(home)
        shutil.rmtree(work, ignore_errors=True)  # the repository and home: hundreds of MB
    arrivals: list[float] = after["arrivals"][len(before["arrivals"]) :]
    line = child[0] if child else "CPU nan s, peak RSS 0 KiB"
    return Result(
        files=files, reviewed=report["stats"]["files_reviewed"], latency=latency,
        concurrency=concurrency, context=context, exit=os.waitstatus_to_exitcode(status), wall=wall,
        requests=report["usage"]["requests"], findings=len(report["findings"]),
        review_cpu=float(line.split("CPU ")[1].split()[0]),
        review_rss_mb=int(line.split("peak RSS ")[1].split()[0]) / 1024,
        cli_cpu=usage.ru_utime + usage.ru_stime, server_cpu=server_cpu, server_rss_mb=server_rss,
        model_cpu=after["cpu"] - before["cpu"],
        span=max(arrivals) + latency - min(arrivals), load=os.getloadavg()[0], **database,
        db_before_mb=db_before_mb,
    )  # fmt: skip


@dataclass
class Result:
    files: int
    reviewed: int
    latency: float
    concurrency: int
    context: str
    exit: int
    wall: float
    requests: int
    findings: int
    review_cpu: float
    review_rss_mb: float
    cli_cpu: float
    server_cpu: float
    server_rss_mb: float
    model_cpu: float
    span: float
    load: float
    db_mb: float
    task_runs: int
    artifacts: int
    artifact_kb: float
    rows: dict[str, int]
    table_mb: dict[str, float]
    db_before_mb: float = 0.0  # before the timed review (the server up, the warm-up's runs in)

    def __str__(self) -> str:
        r = self
        lines = [
            f"{r.files} files ({r.reviewed} reviewed), latency {r.latency:g} s, concurrency "
            f"{r.concurrency}, context {r.context}: exit {r.exit}, wall {r.wall:.1f} s "
            f"({r.wall / r.files * 1e3:.0f} ms "
            f"a changed file, {r.wall / r.reviewed * 1e3:.0f} ms a reviewed file), {r.requests} "
            f"requests, {r.findings} findings",
            f"CPU: review {r.review_cpu:.1f} s ({r.review_cpu / r.requests * 1e3:.1f} ms a "
            f"request), server {r.server_cpu:.1f} s, CLI {r.cli_cpu:.1f} s, model "
            f"{r.model_cpu:.1f} s",
            f"peak RSS: review {r.review_rss_mb:.0f} MB, server {r.server_rss_mb:.0f} MB; "
            f"database {r.db_mb:.1f} MB; task runs {r.task_runs} ({r.task_runs / r.requests:.2f} "
            f"a request); artifacts {r.artifacts} ({r.artifact_kb:.0f} KB); load {r.load:.1f}",
        ]
        lines.append(f"rows: {r.rows}")
        lines.append("MB: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.table_mb.items())))
        if r.latency:
            ideal = r.requests / r.concurrency * r.latency
            lines.append(f"model span {r.span:.1f} s, ideal {ideal:.1f} s: {ideal / r.span:.1%}")
        return "\n  ".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--latency", type=float, default=0.0, help="model answer time, seconds")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--context", nargs="+", choices=["on", "off"], default=["on"],
        help="review.context for each size (both: what the context pack costs)",
    )  # fmt: skip
    parser.add_argument(
        "--finding-every", type=int, default=10, help="one file in N gets a finding (1: every)"
    )
    parser.add_argument("--json", type=Path, help="also append each result to this file")
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)  # the model's
    options = parser.parse_args()
    if options.model:
        paths = json.loads(options.model.read_text())
        serve_model(options.latency, paths, options.finding_every, options.host)
        raise SystemExit(0)
    for count in options.files:
        for context in options.context:
            outcome = run(
                count, options.latency, options.concurrency, context, options.finding_every
            )
            print(outcome, flush=True)
            if options.json:
                with options.json.open("a") as out:
                    out.write(json.dumps(asdict(outcome)) + "\n")
