"""Where the local runtime lives and the Prefect environment a local run gives itself.

No Prefect import here: all of this is decided before the CLI pays for importing Prefect.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_IDLE_MINUTES = 60.0
# Prefect must never phone home from this tool.
TELEMETRY_OFF = {"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
# Prefect's logs stay off the terminal. Without --verbose, a task run's INFO lines ("Finished in
# state Completed()", one per task run: its state says the same) are not sent to the API either;
# its warnings and errors are. That saves ~0.7 ms of the 7-10 ms of CPU a task run costs here,
# and a database row per task run.
QUIET_LOGS = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "WARNING",
}
STARTUP_TIMEOUT_VAR = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
STARTUP_TIMEOUT_DEFAULT = "90"  # Prefect's own 20 s is too short for a first start on 2 cores


def prefect_home(home: Path, version: str | None = None) -> Path:
    """The managed server's Prefect home for the installed Prefect (or `version`): under the
    reviewflow home, never `~/.prefect`, one per Prefect version, so two installs that share a
    reviewflow home with different Prefect versions each keep their server and database."""
    return managed_root(home) / (version or prefect_version())


def managed_root(home: Path) -> Path:
    """Where the managed Prefect homes of every Prefect version live (`<home>/prefect`)."""
    return home / "prefect"


def prefect_homes(home: Path) -> list[Path]:
    """Every managed Prefect home under the reviewflow home `home`: one per Prefect version,
    and the root itself (where one lived before they were kept per version)."""
    root = managed_root(home)
    try:
        versions = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except OSError:
        return []
    return [root, *versions]


def prefect_version() -> str:
    """The installed Prefect's version, read without importing Prefect."""
    return importlib.metadata.version("prefect")


@dataclass(frozen=True)
class PrefectEnvironment:
    """The variables a local run sets, and those it removes, in its own process environment.

    Prefect reads its settings from the process environment when it is imported (and its
    telemetry switch at any time), so this is the one place a run changes `os.environ`:
    `apply` runs once, just before Prefect is imported. The model key variables are removed
    (the key then lives in the run's config only), so nothing the run starts inherits them.
    """

    variables: Mapping[str, str] = field(default_factory=dict)
    removed: tuple[str, ...] = ()

    @classmethod
    def for_run(
        cls, *, verbose: bool, api: Mapping[str, str], removed: Iterable[str]
    ) -> PrefectEnvironment:
        """Telemetry off, a patient startup, quiet logs unless `verbose`, and `api` (the
        `PREFECT_API_URL` and `PREFECT_HOME` of a managed server, or nothing)."""
        variables = {STARTUP_TIMEOUT_VAR: STARTUP_TIMEOUT_DEFAULT, **TELEMETRY_OFF}
        if not verbose:
            variables.update(QUIET_LOGS)
        variables.update(api)
        return cls(variables, tuple(removed))

    def apply(self, environ: MutableMapping[str, str]) -> None:
        """Export the variables (a startup timeout the user set is kept) and drop `removed`."""
        for name, value in self.variables.items():
            if name == STARTUP_TIMEOUT_VAR:
                environ.setdefault(name, value)
            else:
                environ[name] = value
        for name in self.removed:
            environ.pop(name, None)
