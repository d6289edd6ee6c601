"""Running semgrep: found, version-checked, offline, with a timeout and a scrubbed environment.

semgrep runs as a separate program (its own Python environment may differ from reviewflow's:
its dependencies conflict with Prefect's). It is called with `--experimental` (semgrep's OCaml
CLI: ~0.3 s to start instead of ~5 s through its Python CLI), `--metrics=off`,
`--disable-version-check`, local rule files only (never `--config auto` or a registry name) and
an environment holding no secret, so it has neither a reason nor a key to reach the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewflow.errors import SastError

ACCEPTED_VERSION = "1.185.0"  # the version the bundled rules are tested with (make test)
# semgrep's pins conflict with Prefect's: it goes in an environment of its own (README, SAST).
INSTALL_HINT = (
    f"install it in an environment of its own (python -m venv ~/.reviewflow-semgrep && "
    f"~/.reviewflow-semgrep/bin/pip install 'semgrep=={ACCEPTED_VERSION}') and run "
    "`reviewflow config set review.sast_semgrep ~/.reviewflow-semgrep/bin/semgrep`"
)
VERSION_TIMEOUT_S = 60.0
PER_FILE_TIMEOUT_S = 30  # semgrep's own `--timeout`: per rule and file
FAILED_EXIT = {0, 1}  # 1: findings with --error; anything else is a failure
# Passed on to semgrep; nothing else (no model key, no platform token, no SEMGREP_APP_TOKEN).
KEPT_ENV = ("PATH", "TMPDIR", "SYSTEMROOT", "LD_LIBRARY_PATH")


@dataclass(frozen=True, slots=True)
class Semgrep:
    """A semgrep executable and the version it must be (checked on each scan's own output,
    and with `--version` when a scan fails: no extra process when all goes well)."""

    path: str
    version: str = ACCEPTED_VERSION


def locate(configured: str | None, python: str | None = None) -> str:
    """The semgrep to run: `review.sast_semgrep`, else the first of `candidates` that is an
    executable file, else the first on PATH; SastError when there is none."""
    if configured:
        found = shutil.which(os.path.expanduser(configured))
        if found is None:
            raise SastError(f"--sast: review.sast_semgrep '{configured}' is not an executable file")
        return found
    places = candidates(python or sys.executable)
    beside = next((path for path in places if path.is_file() and os.access(path, os.X_OK)), None)
    if beside is not None:
        return str(beside)
    found = shutil.which("semgrep")
    if found is None:
        looked = ", ".join(str(path) for path in places)
        raise SastError(
            f"--sast: semgrep is not installed (not at {looked}, not on PATH): {INSTALL_HINT}"
        )
    return found


def candidates(python: str) -> list[Path]:
    """Where semgrep is looked for before PATH, in order: beside `python` (the
    `reviewflow[sast]` extra), then in its environment's `-sast` sibling: `make dev` builds
    `$(VENV)-sast` beside `$(VENV)` (`.venv-sast` in the checkout), since semgrep's pins
    conflict with Prefect's. Two exact paths: nothing else is searched."""
    bin_dir = Path(python).parent
    venv = bin_dir.parent
    places = [bin_dir / "semgrep"]
    if venv.name:  # not the file system's root
        places.append(venv.with_name(venv.name + "-sast") / "bin" / "semgrep")
    return places


def check_version(path: str, workdir: Path) -> str:
    """The version `path --version` reports; SastError when it fails or is not the accepted one."""
    result = _run([path, "--experimental", "--version"], workdir, VERSION_TIMEOUT_S)
    version = result.stdout.decode("utf-8", "replace").strip().splitlines()
    found = version[-1].strip() if version and result.returncode == 0 else None
    if found is None:
        raise SastError(f"--sast: {path} --version failed: {_first_line(result.stderr)}")
    _check_accepted(found, path)
    return found


def _check_accepted(found: str, path: str) -> None:
    if found != ACCEPTED_VERSION:
        raise SastError(
            f"--sast: semgrep {found} is installed ({path}); reviewflow accepts "
            f"{ACCEPTED_VERSION} only: {INSTALL_HINT}"
        )


def scan_command(semgrep: Semgrep, configs: Sequence[str], targets: Sequence[str]) -> list[str]:
    """The one scan of a change: local rule files, JSON out, nothing sent anywhere."""
    command = [semgrep.path, "scan", "--experimental", "--json", "--quiet", "--metrics=off"]
    command += ["--disable-version-check", "--no-git-ignore", f"--timeout={PER_FILE_TIMEOUT_S}"]
    for config in configs:
        command += ["--config", config]
    return [*command, "--", *targets]


def run_scan(
    semgrep: Semgrep,
    workdir: Path,
    configs: Sequence[str],
    targets: Sequence[str],
    timeout: float,
    watch: Watch | None = None,
) -> list[dict[str, Any]]:
    """semgrep's raw results for `targets` (paths relative to `workdir`); SastError on a failed
    run, a timeout or output that is not semgrep's JSON. Files it cannot parse are skipped."""
    result = _run(scan_command(semgrep, configs, targets), workdir, timeout, watch)
    try:
        document = json.loads(result.stdout)
    except ValueError:
        document = None
    if result.returncode not in FAILED_EXIT or not isinstance(document, dict):
        check_version(semgrep.path, workdir)  # another version says so; else the failure does
        reason = _error_of(document) or _first_line(result.stderr)
        raise SastError(f"--sast: semgrep failed (exit {result.returncode}): {reason}")
    _check_accepted(str(document.get("version", "unknown")), semgrep.path)
    rule_errors = [e for e in document.get("errors", ()) if _is_rule_error(e)]
    if rule_errors:
        raise SastError(f"--sast: semgrep refused the rules: {_message(rule_errors[0])}")
    results = document.get("results", [])
    return [item for item in results if isinstance(item, dict)]


def semgrep_env(workdir: Path) -> dict[str, str]:
    """semgrep's environment: PATH and little else, its settings and logs in `workdir`."""
    env = {name: os.environ[name] for name in KEPT_ENV if name in os.environ}
    env.update(
        HOME=str(workdir),
        LC_ALL="C.UTF-8",
        NO_COLOR="1",
        SEMGREP_SEND_METRICS="off",
        SEMGREP_ENABLE_VERSION_CHECK="0",
        SEMGREP_SETTINGS_FILE=str(workdir / "semgrep-settings.yml"),
        SEMGREP_LOG_FILE=str(workdir / "semgrep.log"),
        SEMGREP_VERSION_CACHE_PATH=str(workdir / "semgrep-version"),
    )
    return env


Watch = Callable[["subprocess.Popen[bytes]"], None]
"""Told of each semgrep process as it starts (an early scan's cancel stops it)."""


def _run(
    command: list[str], workdir: Path, timeout: float, watch: Watch | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=semgrep_env(workdir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as failure:
        raise SastError(f"--sast: cannot run {command[0]}: {failure.strerror or failure}") from None
    with process:
        if watch is not None:
            watch(process)
        try:
            out, errors = process.communicate(timeout=timeout)
        except BaseException as exc:  # a timeout, or a cancel: semgrep is not left running
            process.kill()
            process.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise SastError(
                    f"--sast: semgrep did not finish within {timeout:g}s (review.sast_timeout)"
                ) from None
            raise
    return subprocess.CompletedProcess(command, process.returncode, out, errors)


def _is_rule_error(error: Any) -> bool:
    """A rule or config error (fatal) rather than a file semgrep could not parse (skipped)."""
    if not isinstance(error, dict):
        return False
    kind = str(error.get("type", ""))
    kind = kind if isinstance(error.get("type"), str) else json.dumps(error.get("type"))
    return error.get("level") == "error" and "Syntax error" not in kind and "Lexical" not in kind


def _error_of(document: Any) -> str | None:
    if isinstance(document, dict):
        errors = [e for e in document.get("errors", ()) if isinstance(e, dict)]
        if errors:
            return _message(errors[0])
    return None


def _message(error: dict[str, Any]) -> str:
    text = str(error.get("message") or error.get("type") or "unknown error")
    return " ".join(text.split())[:300]


def _first_line(stderr: bytes) -> str:
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:300]
    return "no error output"
