"""A real PostgreSQL and a real Redis on loopback, and the team server's Prefect processes on them
(deployments/server/start.sh, as documented), for the tests here and bench/team_server.py.

PostgreSQL refuses to run as root: as root its data folder belongs to `nobody` and its
processes run through `runuser -u nobody`. Each part is started by name from `TeamServer.commands`
so a test can SIGKILL it and start it again on the same port and data."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START = ROOT / "deployments" / "server" / "start.sh"
DATABASE = "prefect"
USER = "prefect"


@dataclass(frozen=True)
class Binaries:
    initdb: str
    postgres: str
    pg_isready: str
    createdb: str
    psql: str
    redis: str
    redis_cli: str


def _postgres_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_version)
    return versions[-1] if versions else None


def _version(path: str) -> int:
    part = Path(path).parents[1].name
    return int(part) if part.isdigit() else 0


def find_binaries() -> Binaries | str:
    """The binaries, or the one reason a team server cannot start here."""
    names = ("initdb", "postgres", "pg_isready", "createdb", "psql")
    pg = {name: _postgres_bin(name) for name in names}
    redis, redis_cli = shutil.which("redis-server"), shutil.which("redis-cli")
    missing = [n for n, p in pg.items() if p is None] + [
        n for n, p in (("redis-server", redis), ("redis-cli", redis_cli)) if p is None
    ]
    if missing:
        return (
            f"no {', '.join(missing)} on this machine (Debian: apt-get install postgresql "
            "redis-server; `make dev` and .ci/run install them as root)"
        )
    if os.geteuid() == 0 and not shutil.which("runuser"):
        return "running as root without runuser: PostgreSQL refuses to run as root"
    found = {k: str(v) for k, v in pg.items()}
    return Binaries(redis=str(redis), redis_cli=str(redis_cli), **found)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *args] if os.geteuid() == 0 else args


def private_dir(prefix: str) -> Path:
    """A folder outside pytest's (root's 0700) temporary tree, that `nobody` may own."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        os.chown(path, *_nobody())
    return path


def _nobody() -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


@dataclass
class Datastores:
    """Where the server's PostgreSQL and Redis live and listen."""

    bins: Binaries
    pg_data: Path
    pg_port: int
    redis_dir: Path
    redis_port: int

    @classmethod
    def create(cls, bins: Binaries) -> Datastores:
        """A fresh PostgreSQL cluster (initdb, trust on loopback) and an empty Redis folder."""
        pg_data = private_dir("rf-pg-") / "data"
        initdb = [bins.initdb, "-D", str(pg_data), "-U", USER, "--auth=trust", "-E", "UTF8"]
        made = subprocess.run(
            _as_postgres_user([*initdb, "--no-sync", "--locale=C"]),
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr or made.stdout}")
        return cls(bins, pg_data, free_port(), private_dir("rf-redis-"), free_port())

    @property
    def database_url(self) -> str:
        return f"postgresql+asyncpg://{USER}@127.0.0.1:{self.pg_port}/{DATABASE}"

    def postgres_command(self) -> list[str]:
        socket_dir = self.pg_data.parent  # nobody's; the default under /run may not be
        return _as_postgres_user([
            self.bins.postgres, "-D", str(self.pg_data), "-p", str(self.pg_port),
            "-h", "127.0.0.1", "-k", str(socket_dir), "-c", "max_connections=200",
        ])  # fmt: skip

    def redis_command(self) -> list[str]:
        return [
            self.bins.redis, "--port", str(self.redis_port), "--bind", "127.0.0.1",
            "--dir", str(self.redis_dir), "--appendonly", "yes", "--appendfsync", "everysec",
            "--save", "", "--protected-mode", "yes",
        ]  # fmt: skip

    def wait_postgres(self, deadline: float = 60) -> None:
        """Until PostgreSQL accepts connections; then the `prefect` database, once."""
        ready = [self.bins.pg_isready, "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", USER]
        _poll(lambda: subprocess.run(ready, capture_output=True, check=False).returncode == 0,
              deadline, "PostgreSQL did not accept connections")  # fmt: skip
        create = [self.bins.createdb, "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", USER]
        made = subprocess.run([*create, DATABASE], capture_output=True, text=True, check=False)
        if made.returncode != 0 and "already exists" not in made.stderr:
            raise RuntimeError(f"createdb failed: {made.stderr}")

    def wait_redis(self, deadline: float = 60) -> None:
        ping = [self.bins.redis_cli, "-h", "127.0.0.1", "-p", str(self.redis_port), "ping"]

        def answers() -> bool:
            done = subprocess.run(ping, capture_output=True, text=True, check=False)
            return done.stdout.strip() == "PONG"

        _poll(answers, deadline, "Redis did not answer PING")

    def database_bytes(self) -> int:
        """The size of the `prefect` database, as PostgreSQL counts it."""
        query = f"select pg_database_size('{DATABASE}')"
        done = subprocess.run(
            [self.bins.psql, "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", USER, "-d", DATABASE,
             "-Atc", query],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return int(done.stdout.strip())

    def server_env(self, base: dict[str, str], api_port: int) -> dict[str, str]:
        """The environment start.sh runs with: the database URL and Redis's port; every other
        setting is deployments/server/server.env's."""
        prefect = str(Path(sys.executable).parent / "prefect")
        env = {k: v for k, v in base.items() if not k.startswith("PREFECT_")}
        env.update(
            PREFECT_HOME=base["PREFECT_HOME"],
            PREFECT=prefect,
            PREFECT_API_DATABASE_CONNECTION_URL=self.database_url,
            REVIEWFLOW_REDIS_URL=f"redis://127.0.0.1:{self.redis_port}",
            PREFECT_SERVER_API_PORT=str(api_port),
            REVIEWFLOW_SERVER_HOST="127.0.0.1",
        )
        return env

    def remove(self) -> None:
        shutil.rmtree(self.pg_data.parent, ignore_errors=True)
        shutil.rmtree(self.redis_dir, ignore_errors=True)


def server_commands(
    stores: Datastores, base: dict[str, str], api_port: int
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Every process of the team server by name: the data stores and the two Prefect parts."""
    env = stores.server_env(base, api_port)
    return {
        "postgres": (stores.postgres_command(), base),
        "redis": (stores.redis_command(), base),
        "server": (["sh", str(START), "api"], env),
        "services": (["sh", str(START), "services"], env),
    }


def _poll(ready: Callable[[], bool], deadline: float, failure: str) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.3)
    raise RuntimeError(failure)
