"""The preflight of a remote Dask cluster (`review.dask_address`): once the review's task runner
is connected, before any stage, each worker is asked (`Client.run`) whether it reaches the
Prefect API the review reports to, and, when this process holds no model key, whether it holds
one (a yes or a no: the key never travels). A worker that answers no fails the review with one
line (`ConfigError`, exit 2) before any model request.

`on_worker` is what a worker runs: light, importing nothing of Prefect or Dask.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from reviewflow.config import Config
from reviewflow.config.placement import api_unreachable
from reviewflow.errors import ConfigError
from reviewflow.providers.factory import key_on_workers, key_variables

PROBE_TIMEOUT_S = 5.0  # an API that does not answer a worker's GET /health within this
WORKERS_WAIT_S = 10.0  # a cluster with no worker yet: given up after this
API_HINT = (
    "run the review where the workers reach its API: `--server-host ADDR` binds the managed "
    "server to an address they reach, or set PREFECT_API_URL to a server every machine reaches"
)


@dataclass(frozen=True)
class Preflight:
    """What the workers are asked: the key of `protocol` on `platform` when `ask_key`."""

    protocol: str
    platform: str
    ask_key: bool

    @classmethod
    def of(cls, config: Config) -> Preflight:
        model = config.model
        return cls(model.protocol, str(model.platform), key_on_workers(config))


@dataclass(frozen=True)
class WorkerAnswer:
    """A worker's answers: why the API is out of its reach (None: it answered), whether it
    holds the model's key (None: not asked)."""

    api: str | None
    key: bool | None


def on_worker(api_url: str | None, protocol: str, platform: str, ask_key: bool) -> WorkerAnswer:
    """On a Dask worker: can it reach `api_url`, and (`ask_key`) has it the model's key?"""
    reason = api_unreachable(api_url, PROBE_TIMEOUT_S) if api_url else None
    if not ask_key:
        return WorkerAnswer(reason, None)
    from reviewflow.providers.pool import environment_key

    try:
        held = environment_key(protocol, os.environ, platform) is not None
    except ConfigError:  # its own configuration does not load: it has no usable key
        held = False
    return WorkerAnswer(reason, held)


def check_cluster(client: Any, address: str, api_url: str | None, preflight: Preflight) -> None:
    """Ask every worker of the cluster at `address`; ConfigError on the first that fails."""
    try:
        client.wait_for_workers(1, timeout=WORKERS_WAIT_S)
    except TimeoutError:
        raise ConfigError(
            f"the Dask scheduler at {address} (review.dask_address) has no worker "
            f"(waited {WORKERS_WAIT_S:g} s)"
        ) from None
    args = (api_url, preflight.protocol, preflight.platform, preflight.ask_key)
    try:
        answers: dict[str, Any] = client.run(on_worker, *args)
    except Exception as exc:  # noqa: BLE001 - whatever a worker raised: it cannot run the review
        raise ConfigError(
            f"the workers of the Dask scheduler at {address} cannot run reviewflow's preflight "
            f"({type(exc).__name__}: {exc}): install this reviewflow on every worker"
        ) from None
    for worker, answer in sorted(answers.items()):
        if answer.api is not None:
            raise ConfigError(
                f"the Dask worker {worker} cannot reach the Prefect API at {api_url}: "
                f"{answer.api} (its task runs would not be recorded); {API_HINT}"
            )
    for worker, answer in sorted(answers.items()):
        if answer.key is False:
            names = " or ".join(key_variables(preflight.protocol))
            raise ConfigError(
                f"no API key for the {preflight.protocol} protocol on the Dask worker {worker} "
                f"(nor here): set {names} in every worker's environment"
            )
