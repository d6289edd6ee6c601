"""A Dask cluster on "another machine": a network namespace of its own (`unshare --net`), joined
to this one by a veth pair, so its scheduler and workers reach only what this machine offers on
the pair's address (the scripted model, a Prefect API bound there), never this machine's
loopback; and each worker in a mount namespace where the caller's files are hidden under an
empty tmpfs. This machine reaches the scheduler at the namespace's end of the pair.

Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), `unshare`, `nsenter` and `ip`; `available`
says whether they work here.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.server.stopping import eventually


def available() -> bool:
    """Whether a network namespace with a veth pair can be made here."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("unshare", "nsenter", "ip")):
        return False
    try:
        probe = ["unshare", "--net", "--mount", "sh", "-c", "ip link set lo up"]
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Namespace:
    """A network namespace held by a sleeping process, and its veth pair: `host` is this
    machine's address on it, `inside` the namespace's."""

    def __init__(self) -> None:
        self.holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"])
        own = os.readlink("/proc/self/ns/net")
        entered = eventually(lambda: os.readlink(f"/proc/{self.holder.pid}/ns/net") != own, 30)
        assert entered, "unshare made no network namespace"
        pid = self.holder.pid
        self.link = f"rfh{pid}"[:15]
        subnet = f"10.{random.randrange(200, 250)}.{random.randrange(256)}"
        last = random.randrange(0, 64) * 4  # a /30: .1 here, .2 there
        self.host, self.inside = f"{subnet}.{last + 1}", f"{subnet}.{last + 2}"
        self.network = f"{subnet}.{last}/30"  # machine-local: the tests' network guard lets it
        peer = f"rfn{pid}"[:15]
        self._ip("link", "add", self.link, "type", "veth", "peer", "name", peer, "netns", str(pid))
        self._ip("addr", "add", f"{self.host}/30", "dev", self.link)
        self._ip("link", "set", self.link, "up")
        for args in (["addr", "add", f"{self.inside}/30", "dev", peer], ["link", "set", peer,
                     "up"], ["link", "set", "lo", "up"]):  # fmt: skip
            self._ip(*args, inside=True)

    def command(self, args: list[str]) -> list[str]:
        """`args` run inside the namespace."""
        return ["nsenter", "-t", str(self.holder.pid), "-n", "--", *args]

    def _ip(self, *args: str, inside: bool = False) -> None:
        command = ["ip", *args]
        subprocess.run(self.command(command) if inside else command, check=True, timeout=30)

    def close(self) -> None:
        self.holder.kill()  # the namespace goes with its last process, and the pair with it
        self.holder.wait(timeout=30)
        subprocess.run(["ip", "link", "del", self.link], capture_output=True, check=False)


class IsolatedCluster:
    """`dask scheduler` and two single-threaded `dask worker` processes in `namespace`, the
    workers with `env` (their own model key) and the `hidden` directories out of their sight."""

    def __init__(
        self, namespace: Namespace, base: Path, hidden: list[Path], env: dict[str, str]
    ) -> None:
        self.namespace, self.base, self.hidden, self.env = namespace, base, hidden, env
        self.processes: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def start(self) -> None:
        file, host = self.base / "scheduler.json", self.namespace.inside
        quiet = ["--no-dashboard", "--dashboard-address", f"{host}:0"]
        self._spawn("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", host, "--port", "0", *quiet,
                                  "--scheduler-file", str(file)], self.env)  # fmt: skip
        ready = eventually(lambda: file.exists() and file.read_text().endswith("}"), 120)
        assert ready, self.logs()
        self.address = json.loads(file.read_text())["address"]
        mounts = " && ".join(f"mount -t tmpfs none '{path}'" for path in self.hidden)
        for name in ("worker-1", "worker-2"):
            own = self.base / name
            (own / "tmp").mkdir(parents=True)
            worker = (
                f"{mounts} && cd '{own}' && exec '{sys.executable}' -m distributed.cli.dask_worker "
                f"{self.address} --name {name} --nthreads 1 --no-nanny --host {host} "
                f"{' '.join(quiet)} --local-directory '{own}'"
            )
            env = {**self.env, "TMPDIR": str(own / "tmp"), "PREFECT_HOME": str(own / "prefect")}
            env["REVIEWFLOW_HOME"] = str(own / "home")
            self._spawn(name, ["unshare", "--mount", "sh", "-c", worker], env)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> None:
        log = (self.base / f"{name}.log").open("wb")
        command = self.namespace.command(args)
        self.processes.append(
            subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        )

    def stop(self) -> None:
        print(self.logs())  # shown when the test fails
        for process in self.processes:
            process.terminate()
        deadline = time.monotonic() + 30
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + p.read_text(errors="replace")[-2000:]
            for p in sorted(self.base.glob("*.log"))
        )
