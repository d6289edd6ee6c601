"""Where a review's stages run, checked before the review starts: a Dask scheduler that answers
(`review.dask_address`), a managed server's address (`prefect.server_host`) that is one, and a
shared store (`review.shared_store`) that is a directory outside the reviewed repository, whose
folders this function makes the user's alone; and whether a Prefect API answers
(`api_unreachable`: what a remote cluster's workers run in the runner's preflight).

Each problem is a `ConfigError`: one line in the user's terms, exit 2, before any model request.
"""

from __future__ import annotations

import http.client
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from reviewflow.config.schema import ReviewSettings, TaskRunner
from reviewflow.errors import ConfigError

SCHEDULER_WAIT_S = 10.0  # a scheduler that neither answers nor refuses: given up after this
DASK_PORT = 8786  # a scheduler address without a port
STORE_FOLDERS = (("snapshots",), ("cache",), ("cache", "results"))
PRIVATE_DIR = 0o700


def check_placement(review: ReviewSettings, repo_root: Path) -> None:
    """The Dask settings make sense together, the scheduler answers, the store is usable."""
    if review.dask_address and review.task_runner is TaskRunner.THREAD:
        raise ConfigError(
            f"review.dask_address ({review.dask_address}) is used only with "
            "review.task_runner dask: add --task-runner dask, or unset review.dask_address"
        )
    if review.task_runner is TaskRunner.DASK and review.dask_address:
        check_scheduler(review.dask_address)
    if review.shared_store:
        prepare_store(Path(review.shared_store), repo_root)


def check_scheduler(address: str, wait: float = SCHEDULER_WAIT_S) -> None:
    """A TCP connection to the scheduler at `address` (tcp:// or tls://) opens: a refusal is
    reported at once, silence after `wait` seconds. Other transports are not checked here."""
    parts = urlsplit(address)
    if parts.scheme not in ("tcp", "tls"):
        return
    where = f"the Dask scheduler at {address} (review.dask_address)"
    try:
        host, port = parts.hostname, parts.port or DASK_PORT
    except ValueError:
        raise ConfigError(f"{where}: the port is not a number") from None
    if not host:
        raise ConfigError(f"{where}: the address names no host")
    try:
        with socket.create_connection((host, port), timeout=wait):
            return
    except ConnectionRefusedError:
        raise ConfigError(f"cannot reach {where}: the connection was refused") from None
    except TimeoutError:
        raise ConfigError(f"cannot reach {where}: no answer within {wait:g} s") from None
    except socket.gaierror:
        raise ConfigError(f"cannot reach {where}: unknown host {host}") from None
    except OSError as exc:
        reason = exc.strerror or "the connection failed"
        raise ConfigError(f"cannot reach {where}: {reason.lower()}") from None


def prepare_store(store: Path, repo_root: Path) -> None:
    """`store` is (or becomes) a directory outside `repo_root`; its folders for snapshots and
    results are made, the user's alone (0700): the snapshots hold source, the results findings.
    The store itself, if it exists, keeps the mode its owner gave it."""
    where = f"review.shared_store ({store})"
    if not store.is_absolute():
        raise ConfigError(f"{where} must be an absolute path")
    resolved, repository = store.resolve(), repo_root.resolve()
    if resolved == repository or repository in resolved.parents:
        raise ConfigError(
            f"{where} is inside the reviewed repository {repository}: "
            "name a directory outside it (nothing is written to the repository)"
        )
    if store.exists() and not store.is_dir():
        raise ConfigError(f"{where} is not a directory")
    try:
        store.mkdir(parents=True, exist_ok=True)
        for folder in STORE_FOLDERS:
            path = store.joinpath(*folder)
            path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
            if path.stat().st_uid == os.getuid():
                path.chmod(PRIVATE_DIR)  # one made before, with other permissions
    except NotADirectoryError:
        raise ConfigError(f"{where}: a part of it is a file, not a directory") from None
    except OSError as exc:
        reason = (exc.strerror or "cannot be written").lower()
        raise ConfigError(f"{where} cannot be used: {reason}") from None


API_ANSWERS = {200, 401, 403}  # /health answered (a server behind credentials answers too)


def api_unreachable(api_url: str, timeout: float) -> str | None:
    """Why a GET of `<api_url>/health` from this machine fails, in a few words; None when the
    Prefect API answered within `timeout` seconds."""
    url = api_url.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except urllib.error.URLError as exc:
        return _reason(exc.reason, timeout)
    except (TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
        return _reason(exc, timeout)
    return None if status in API_ANSWERS else f"GET /health answered HTTP {status}"


def _reason(error: object, timeout: float) -> str:
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, ConnectionRefusedError):
        return "the connection was refused"
    if isinstance(error, socket.gaierror):
        return "unknown host"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error) or type(error).__name__
