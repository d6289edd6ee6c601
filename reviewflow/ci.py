"""Is this run in CI? The generic CI variables below and every publishing platform's own (each
platform's spec in the registry, `reviewflow.platforms`). Read by the trust model and the
managed server; light to import, since the CLI asks before its own imports."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow import platforms

GENERIC_CI_VARIABLES = ("CI", "JENKINS_URL")
_FALSE = ("", "false", "0")


def is_ci(env: Mapping[str, str]) -> bool:
    """Whether any CI variable is set to something other than empty, `false` or `0`."""
    return bool(ci_variables(env))


def ci_variable_names(*, plugins: bool = True) -> tuple[str, ...]:
    """The variables that make a run a CI run: the generic ones, then the platforms'."""
    found = platforms.ci_variables(plugins=plugins)
    return tuple(dict.fromkeys((*GENERIC_CI_VARIABLES, *found)))


def ci_variables(env: Mapping[str, str], *, plugins: bool = True) -> tuple[str, ...]:
    """The CI variables set in `env` (empty outside CI): the trust decision's only input.
    Without `plugins`, only the generic and built-in platforms' (no installed package's
    metadata read: ~8 ms of a CLI start), for a guess that the review itself makes again."""
    return tuple(name for name in ci_variable_names(plugins=plugins) if _set(env, name))


def _set(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() not in _FALSE
