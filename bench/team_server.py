"""The team server (deployments/server/, issue 40) against the managed local server: the same
review of N changed files (`bench/synth.py`'s repository, `bench/scale.py`'s scripted model, one
file in `--finding-every` with a finding: 1 gives every file one) run once through each, in fresh
homes, optionally beside `--busy N` busy-looping processes (started before the first run,
stopped after the last).

- managed: `bench/scale.py`'s run as it is (the CLI hands the review to the warm process; the
  managed server on SQLite);
- team: a real PostgreSQL and Redis on loopback with the API server and its services started by
  deployments/server/start.sh (tests/teamserver/services.py, as the tests start them), and the
  review run by the CLI with `PREFECT_API_URL` at that server (the review in the CLI process).

Recorded for each: wall of the review and per changed file (and the team's overhead per file
over the managed server's), peak RSS of every process (the review; the server's API and services
processes, PostgreSQL's and Redis's for the team server, from VmHWM once the server has recorded
the review's last task run), the database's size before and after the review (the SQLite file
with its WAL, or `pg_database_size`), the task runs recorded for the review's flow run against
the expected (the other server's count of the same review: target 100%) and their states
against three each (Pending, Running, Completed), and for the team server the events it
received (Redis's `events` stream, entries added during the review) and stored (none:
server.env's event persister is off).

One command per size, e.g. `python bench/team_server.py --files 5000 --finding-every 1 --busy 2`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
import scale  # noqa: E402
from synth import make_repo  # noqa: E402
from time_to_exit import busy_loops  # noqa: E402

from tests.teamserver.services import (  # noqa: E402
    DATABASE,
    USER,
    Datastores,
    find_binaries,
    free_port,
    server_commands,
)

PARTS = ("postgres", "redis", "server", "services")


@dataclass
class Team:
    files: int
    reviewed: int
    exit: int
    wall: float
    requests: int
    findings: int
    review_rss_mb: float
    rss_mb: dict[str, float]  # the largest process of each part
    db_mb: float
    db_empty_mb: float  # the database as the server made it, before the review
    task_runs: int
    task_run_states: int
    events_received: int  # entries added to Redis's `events` stream during the review
    events: int  # stored in the database
    load: float

    def __str__(self) -> str:
        rss = ", ".join(f"{name} {mb:.0f} MB" for name, mb in self.rss_mb.items())
        grown = self.db_mb - self.db_empty_mb
        return (
            f"team server, {self.files} files ({self.reviewed} reviewed): exit {self.exit}, wall "
            f"{self.wall:.1f} s ({self.wall / self.files * 1e3:.1f} ms a file), {self.requests} "
            f"requests, {self.findings} findings\n  peak RSS: review {self.review_rss_mb:.0f} MB, "
            f"{rss}\n  database {self.db_mb:.1f} MB ({self.db_empty_mb:.1f} MB empty: +"
            f"{grown:.1f} MB, {grown / self.files * 1e3:.1f} KB a file); task runs "
            f"{self.task_runs}, their states {self.task_run_states} "
            f"({_ratio(self.task_run_states, 3 * self.task_runs)} of 3 each); events received "
            f"{self.events_received}, stored {self.events}; load {self.load:.1f}"
        )


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def _managed(files: int, managed: scale.Result) -> str:
    grown = managed.db_mb - managed.db_before_mb
    states = managed.rows.get("task_run_state", 0)  # the warm-up review's few included
    return (
        f"managed server, {files} files ({managed.reviewed} reviewed): exit {managed.exit}, wall "
        f"{managed.wall:.1f} s ({managed.wall / files * 1e3:.1f} ms a file), {managed.requests} "
        f"requests, {managed.findings} findings\n  peak RSS: review {managed.review_rss_mb:.0f} "
        f"MB, server (API and services) {managed.server_rss_mb:.0f} MB\n  database "
        f"{managed.db_mb:.1f} MB ({managed.db_before_mb:.1f} MB before: +{grown:.1f} MB, "
        f"{grown / files * 1e3:.1f} KB a file); task runs {managed.task_runs}, task-run states "
        f"in the database {states}; events stored {managed.rows.get('events', 0)}; load "
        f"{managed.load:.1f}"
    )


def _tree(pid: int) -> list[int]:
    """`pid` and every process under it, from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _peak_mb(pid: int) -> float:
    """The largest peak RSS among `pid` and its descendants (a part's main process)."""
    peaks = [0.0]
    for each in _tree(pid):
        with contextlib.suppress(OSError):
            peaks.append(scale._peak_rss_mb(each))
    return max(peaks)


def _sql(stores: Datastores, query: str) -> str:
    psql = [stores.bins.psql, "-h", "127.0.0.1", "-p", str(stores.pg_port), "-U", USER]
    done = subprocess.run(
        [*psql, "-d", DATABASE, "-Atc", query], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _task_runs(stores: Datastores) -> int:
    flow = (
        "(select id from flow_run where parent_task_run_id is null order by created desc limit 1)"
    )
    return int(_sql(stores, f"select count(*) from task_run where flow_run_id = {flow}"))


def _task_run_states(stores: Datastores) -> int:
    flow = (
        "(select id from flow_run where parent_task_run_id is null order by created desc limit 1)"
    )
    runs = f"(select id from task_run where flow_run_id = {flow})"
    return int(_sql(stores, f"select count(*) from task_run_state where task_run_id in {runs}"))


def _events_added(stores: Datastores) -> int:
    """Every entry ever added to Redis's `events` stream (Redis 7's `entries-added`)."""
    cli = [stores.bins.redis_cli, "-h", "127.0.0.1", "-p", str(stores.redis_port)]
    done = subprocess.run([*cli, "XINFO", "STREAM", "events"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    lines = done.stdout.splitlines()
    for at, line in enumerate(lines[:-1]):
        if line.strip() == "entries-added":
            return int(lines[at + 1])
    return 0  # no event yet: no stream


def _settled(stores: Datastores, quiet: float = 15.0) -> None:
    """Until the task runs recorded stay the same for `quiet` seconds (recorded from events)."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        count = _task_runs(stores)
        if count != last:
            last, since = count, time.monotonic()
        time.sleep(0.5)


@contextlib.contextmanager
def team_server(work: Path) -> Iterator[tuple[str, Datastores, dict[str, subprocess.Popen[bytes]]]]:
    """PostgreSQL, Redis, the API server and its services, as tests/teamserver starts them."""
    import httpx

    bins = find_binaries()
    if isinstance(bins, str):
        raise SystemExit(f"team_server: {bins}")
    stores = Datastores.create(bins)
    (work / "prefect").mkdir(mode=0o700)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "REVIEWFLOW_"))}
    base.update(PREFECT_HOME=str(work / "prefect"), DO_NOT_TRACK="1")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    commands = server_commands(stores, base, port)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name in PARTS:
            args, env = commands[name]
            with open(work / f"{name}.log", "ab") as log:
                procs[name] = subprocess.Popen(
                    args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            if name == "postgres":
                stores.wait_postgres()
            elif name == "redis":
                stores.wait_redis()
            elif name == "server":
                deadline = time.monotonic() + 180
                while not _healthy(httpx, api):
                    if time.monotonic() > deadline or procs[name].poll() is not None:
                        raise SystemExit(f"team_server: no API: see {work / 'server.log'}")
                    time.sleep(0.5)
        yield api, stores, procs
    finally:
        for proc in reversed(list(procs.values())):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        stores.remove()


def _healthy(httpx: Any, api: str) -> bool:
    try:
        return bool(httpx.get(f"{api}/health", timeout=2).status_code == 200)
    except httpx.HTTPError:
        return False


def run_team(files: int, concurrency: int, every: int = 10) -> Team:
    from tests.wire_server import TEST_KEY

    work = Path(tempfile.mkdtemp(prefix=f"rf-team-{files}-"))
    repo = work / "repo"
    base, head = make_repo(repo, files)
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", head],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    model = scale.Model(0.0, sorted(p for p in listed if p.endswith(scale.CODE)), work, every)
    try:
        with team_server(work) as (api, stores, procs):
            env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
            env.update(REVIEWFLOW_HOME=str(work / "home"), PYTHONPATH=str(ROOT))
            env.update(PREFECT_API_URL=api, REVIEWFLOW_MODEL_NAME="bench-model")
            env.update(REVIEWFLOW_MODEL_ENDPOINT=model.url, REVIEWFLOW_MODEL_API_KEY=TEST_KEY)
            args = [sys.executable, "-m", "flows.review", "--console", "off", "--no-progress"]
            args += ["--repo", str(repo), "--from", base, "--to", head, "--no-cache"]
            args += ["--concurrency", str(concurrency), "--report-dir", str(work / "out")]
            db_empty_mb = stores.database_bytes() / 2**20
            events_before = _events_added(stores)
            start = time.perf_counter()
            cli = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(cli.pid, 0)
            wall = time.perf_counter() - start
            _settled(stores)
            rss = {name: _peak_mb(proc.pid) for name, proc in procs.items()}
            db_mb = stores.database_bytes() / 2**20
            task_runs, events = _task_runs(stores), int(_sql(stores, "select count(*) from events"))
            states, received = _task_run_states(stores), _events_added(stores) - events_before
        report = json.loads((work / "out" / "review-report.json").read_text())
    finally:
        model.close()
        shutil.rmtree(work, ignore_errors=True)  # the repository, home and datastores
    return Team(
        files=files, reviewed=report["stats"]["files_reviewed"],
        exit=os.waitstatus_to_exitcode(status), wall=wall, requests=report["usage"]["requests"],
        findings=len(report["findings"]), review_rss_mb=usage.ru_maxrss / 1024, rss_mb=rss,
        db_mb=db_mb, db_empty_mb=db_empty_mb, task_runs=task_runs, task_run_states=states,
        events_received=received, events=events, load=os.getloadavg()[0],
    )  # fmt: skip


def compare(count: int, concurrency: int, every: int) -> dict[str, object]:
    """One size through both servers, printed as it goes."""
    team = run_team(count, concurrency, every)
    print(team, flush=True)
    managed = scale.run(count, 0.0, concurrency, every=every)
    print(_managed(count, managed), flush=True)
    overhead = (team.wall - managed.wall) / count * 1e3
    print(
        f"  team over managed: {overhead:+.1f} ms a file; task runs recorded, team / managed "
        f"(expected): {_ratio(team.task_runs, managed.task_runs)}",
        flush=True,
    )
    return {"files": count, "every": every, "team": asdict(team), "managed": asdict(managed)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[500])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--finding-every", type=int, default=10, help="one file in N gets a finding (1: every)"
    )
    parser.add_argument(
        "--busy", type=int, default=0, help="busy-looping processes beside the runs (2: both cores)"
    )
    parser.add_argument("--json", type=Path, help="also append each result to this file")
    options = parser.parse_args()
    with busy_loops(options.busy):
        for count in options.files:
            row = compare(count, options.concurrency, options.finding_every)
            row["busy"] = options.busy
            if options.json:
                with options.json.open("a") as out:
                    out.write(json.dumps(row) + "\n")
