"""The flows deployments run (`prefect.yaml`): a review triggered from CI, on a worker.

A deployed run takes everything secret from the worker: the API key from its environment or
from the Prefect Secret block `model.api_key_block` names, Git credentials from its environment
or Git configuration. Parameters name the repository, the change and config overrides only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact
from prefect.blocks.system import Secret
from prefect.exceptions import FailedRun
from prefect.runtime import flow_run
from prefect.states import Cancelled, Completed, Failed, State
from pydantic import SecretStr

from flows.review_flow import run_review
from reviewflow.cancel import EXIT_CODE as CANCELLED_EXIT
from reviewflow.ci import ci_variables
from reviewflow.config import Config, home_dir, load_config, parameter_origins
from reviewflow.errors import ConfigError
from reviewflow.git.mirror import fetch_request_head, is_remote, local_repository
from reviewflow.platforms import platform_names
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.setup import publishing
from reviewflow.report.gate import GATE_PASSED, run_reason, run_summary, summary_key
from reviewflow.request import ReviewRequest

# A deployed run reviews a change someone pushed: the repository's own rules always come
# from a trusted base (see "Trust in CI"), whether or not the worker itself runs in CI.
DEPLOYMENT_CI = "deployment"

# The `platform` parameter's choices: every platform of the registry when the flow is imported
# (a deployment's parameter schema lists them; a plugin's too, once installed on the worker).
if TYPE_CHECKING:
    PlatformName = str
else:
    PlatformName = Literal[platform_names()]


def deployed_config(
    overrides: Mapping[str, Any] | None,
    env: Mapping[str, str],
    named: Mapping[str, str] | None = None,
) -> Config:
    """The worker's config (its file and environment) with the run's overrides and API key;
    an error names the parameter a value came from (`named`: the keys that are not in the
    `overrides` parameter)."""
    if "api_key" in ((overrides or {}).get("model") or {}):
        raise ConfigError(
            "invalid value for the 'overrides' parameter: model.api_key cannot be a parameter "
            "(accepted: the worker's environment, or model.api_key_block naming a Secret block)"
        )
    named = {**parameter_origins(overrides or {}, "overrides"), **(named or {})}
    config = load_config(home_dir(env), env, dict(overrides or {}), named)
    block = config.model.api_key_block
    if block:
        config.model.api_key = secret_block_value(block)
    return config


def secret_block_value(name: str, key: str = "model.api_key_block") -> SecretStr:
    """The value of the Prefect Secret block `name` (`key` is the setting that names it)."""
    try:
        secret: Any = Secret.load(name)  # sync here: a sync caller gets the block
        value = secret.get()
    except ValueError:
        raise ConfigError(
            f"invalid value for '{key}': {name!r} (accepted: the name of an "
            "existing Prefect Secret block, e.g. `prefect block create secret`)"
        ) from None
    return SecretStr(str(value))


# The request's parameters, as the `publish.*` settings `_with_publish` makes of them.
PUBLISH_PARAMETERS = {
    "publish.target": "the 'platform' parameter",
    "publish.repo": "the 'platform_repo' parameter",
    "publish.pull_request": "the 'pull_request' parameter",
}


def _with_publish(
    overrides: Mapping[str, Any] | None,
    platform: str | None,
    platform_repo: str | None,
    pull_request: int | None,
) -> dict[str, Any]:
    """The run's overrides with its request's parameters as `publish.*` settings."""
    merged = {
        key: dict(value) if isinstance(value, Mapping) else value
        for key, value in (overrides or {}).items()
    }
    if platform is not None:
        settings = {"target": platform, "repo": platform_repo, "pull_request": pull_request}
        publish = merged.setdefault("publish", {})
        publish.update({k: v for k, v in settings.items() if v is not None})
    return merged


def publish_token(config: Config) -> SecretStr | None:
    """The platform token from the Secret block `publish.token_block` names (None: unset, the
    worker's environment then holds it)."""
    block = config.publish.token_block
    return secret_block_value(block, "publish.token_block") if block else None


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
    platform: PlatformName | None = None,
    platform_repo: str | None = None,
    pull_request: int | None = None,
    files: list[str] | None = None,
    all_files: bool = False,
) -> State:
    """Review one commit or a `from_ref`..`to_ref` range of `repository` (a path or a URL), or
    the pull/merge request `pull_request` of `platform_repo` on `platform` (its findings are
    published there; its range is the request's, or only what is new since the last review).
    With `files` (paths from the repository's top) or `all_files`, audit the files of
    `commit`'s tree as they are, with no diff (`reviewflow review --files/--all --commit`).

    Keeps the name it was given (`deployment-run --run-name`); its `review` subflow's run is
    named by the review's ID. Ends Completed ("gate passed"), Cancelled where the CLI would exit
    130, or, where it would exit 1 or 2, Failed (`failed`).
    Either way the run's summary is its table artifact (`summary_key`); a Completed run's
    result is the same summary.
    """
    env = dict(os.environ)
    publish = _with_publish(overrides, platform, platform_repo, pull_request)
    config = deployed_config(publish, env, PUBLISH_PARAMETERS if platform is not None else None)
    if (files is not None or all_files) and commit is None:
        raise ConfigError(
            "a deployed audit ('files' or 'all_files') needs 'commit': the tree it reads "
            "(e.g. main, or a SHA)"
        )
    if commit is None and from_ref is None and platform is None:
        raise ConfigError(
            "a deployed review needs 'commit', 'from_ref' and 'to_ref', or 'platform' and "
            "'pull_request'"
        )
    home = home_dir(env)
    local = local_repository(repository, home)
    head_ref = spec_of(platform).request_head if platform is not None else None
    if head_ref is not None and pull_request is not None and is_remote(repository):
        fetch_request_head(local, head_ref.format(n=pull_request), pull_request)
    request = ReviewRequest.from_flags(
        str(local),
        commit=commit,
        from_ref=from_ref,
        to_ref=to_ref,
        trusted_ref=trusted_ref,
        no_cache=no_cache,
        home=str(home),
        ci_variables=ci_variables(env) or (DEPLOYMENT_CI,),
        deployed=True,
        files=tuple(files) if files is not None else None,
        audit_all=all_files,
    )
    token = publish_token(config)
    with publishing(config, env, request, token=token, run_url=flow_run.ui_url) as request:
        run = run_review(request, config)
    summary = run_summary(run).model_dump(mode="json")
    if run.published is not None:
        summary["pull_request"] = run.published.url  # the artifact links to the request
    create_table_artifact(
        [summary], key=summary_key(repository), description="reviewflow ci-review summary"
    )
    if run.publish_error:
        get_run_logger().warning(run.publish_error)
    reason = run_reason(run, config.review.fail_on)
    if run.exit_code == CANCELLED_EXIT:
        return Cancelled(message=reason, data=FailedRun(reason))
    if reason:
        get_run_logger().error(reason)
        return failed(reason)
    return Completed(message=GATE_PASSED, data=summary)
