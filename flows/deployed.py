"""The flows deployments run (`prefect.yaml`): a review triggered from CI, on a worker.

A deployed run takes everything secret from the worker: the API key from its environment or
from the Prefect Secret block `model.api_key_block` names, Git credentials from its environment
or Git configuration. Parameters name the repository, the change and config overrides only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact
from prefect.blocks.system import Secret
from prefect.exceptions import FailedRun
from prefect.states import Completed, Failed, State
from pydantic import SecretStr

from flows.review import run_review
from reviewflow.ci import ci_variables
from reviewflow.config import Config, home_dir, load_config
from reviewflow.errors import ConfigError
from reviewflow.git.mirror import local_repository
from reviewflow.report.gate import GATE_PASSED, run_reason, run_summary, summary_key
from reviewflow.request import ReviewRequest

# A deployed run reviews a change someone pushed: the repository's own rules always come
# from a trusted base (see "Trust in CI"), whether or not the worker itself runs in CI.
DEPLOYMENT_CI = "deployment"


def deployed_config(overrides: Mapping[str, Any] | None, env: Mapping[str, str]) -> Config:
    """The worker's config (its file and environment) with the run's overrides and API key."""
    if "api_key" in ((overrides or {}).get("model") or {}):
        raise ConfigError(
            "invalid value for the 'overrides' parameter: model.api_key cannot be a parameter "
            "(accepted: the worker's environment, or model.api_key_block naming a Secret block)"
        )
    config = load_config(home_dir(env), env, dict(overrides or {}))
    block = config.model.api_key_block
    if block:
        config.model.api_key = secret_block_value(block)
    return config


def secret_block_value(name: str) -> SecretStr:
    """The value of the Prefect Secret block `name`."""
    try:
        secret: Any = Secret.load(name)  # sync here: a sync caller gets the block
        value = secret.get()
    except ValueError:
        raise ConfigError(
            f"invalid value for 'model.api_key_block': {name!r} (accepted: the name of an "
            "existing Prefect Secret block, e.g. `prefect block create secret`)"
        ) from None
    return SecretStr(str(value))


def failed(reason: str) -> State:
    """A Failed state Prefect can read back: the reason is its message, and its result is
    `FailedRun(reason)`, from this state as from the API (which never holds a summary: the
    artifact does). A summary as the data made the engine's own `state.result()` raise
    "TypeError: Unexpected result for failed state" at the end of every deployed run."""
    return Failed(message=reason, data=FailedRun(reason))


@flow(name="ci-review", log_prints=False, validate_parameters=True)
def ci_review(
    repository: str,
    commit: str | None = None,
    from_ref: str | None = None,
    to_ref: str | None = None,
    trusted_ref: str | None = None,
    overrides: dict[str, Any] | None = None,
    no_cache: bool = False,
) -> State:
    """Review one commit or a `from_ref`..`to_ref` range of `repository` (a path or a URL).

    Ends Completed ("gate passed") or, where the CLI would exit 1 or 2, Failed (`failed`).
    Either way the run's summary is its table artifact (`summary_key`); a Completed run's
    result is the same summary.
    """
    env = dict(os.environ)
    if commit is None and from_ref is None:
        raise ConfigError("a deployed review needs 'commit' or 'from_ref' and 'to_ref'")
    config = deployed_config(overrides, env)
    home = home_dir(env)
    request = ReviewRequest.from_flags(
        str(local_repository(repository, home)),
        commit=commit,
        from_ref=from_ref,
        to_ref=to_ref,
        trusted_ref=trusted_ref,
        no_cache=no_cache,
        home=str(home),
        ci_variables=ci_variables(env) or (DEPLOYMENT_CI,),
    )
    run = run_review(request, config)
    summary = run_summary(run).model_dump(mode="json")
    create_table_artifact(
        [summary], key=summary_key(repository), description="reviewflow ci-review summary"
    )
    reason = run_reason(run, config.review.fail_on)
    if reason:
        get_run_logger().error(reason)
        return failed(reason)
    return Completed(message=GATE_PASSED, data=summary)
