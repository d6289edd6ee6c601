"""Is this run in CI? (`CI_VARIABLES` below.) Read by the trust model
and the managed server; light to import, since the CLI asks before its own imports."""

from __future__ import annotations

from collections.abc import Mapping

CI_VARIABLES = (
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "GITEA_ACTIONS",
    "JENKINS_URL",
    "BITBUCKET_BUILD_NUMBER",
    "TF_BUILD",
)
_FALSE = ("", "false", "0")


def is_ci(env: Mapping[str, str]) -> bool:
    """Whether any CI variable is set to something other than empty, `false` or `0`."""
    return bool(ci_variables(env))


def ci_variables(env: Mapping[str, str]) -> tuple[str, ...]:
    """The CI variables set in `env` (empty outside CI): the trust decision's only input."""
    return tuple(name for name in CI_VARIABLES if _set(env, name))


def _set(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() not in _FALSE
