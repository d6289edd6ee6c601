"""The code review platforms reviewflow publishes to, in one registry: for each, how
`--publish auto` and the trust model recognize its CI, its token's variables, where its request
comes from and the client that speaks its API (both named by import path), and its words.

A built-in platform is a package `reviewflow/publish/<platform>/` whose `__init__` holds its
spec as `PLATFORM`, declared by reviewflow's own entry point in the group `reviewflow.platforms`
(pyproject.toml): the registry names no platform module, so the import rule runs one way. An
installed package adds one through the same group, whose object is a `PlatformSpec`:

    [project.entry-points."reviewflow.platforms"]
    forge = "reviewflow_forge:PLATFORM"

The specs are light: the locator and the client are imported only when a request is published
to, so the CLI's start, the config's check and the trust model read the registry cheaply.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from typing import Any

from reviewflow.errors import ConfigError
from reviewflow.plugins import load_spec

ENTRY_POINT_GROUP = "reviewflow.platforms"
DISTRIBUTION = "reviewflow"  # its own entry points in the group are the built-in platforms
RESERVED = ("off", "auto")  # `--publish` choices that are not platforms
_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")


class PlatformPluginError(ConfigError):
    """An installed platform plugin cannot be used (it fails to load, or is not a spec)."""


@dataclass(frozen=True)
class PlatformSpec:
    """One code review platform.

    `locate` is `module:function`, the function taking `(PublishSettings, env)` and returning
    `(RequestRef, EventShas)` (ConfigError naming the flag to give when one is missing);
    `client` is `module:callable`, called `(ref, token, timeout_s)` for its
    `reviewflow.publish.client.PlatformClient`. `detect(env)` says whether `env` is this
    platform's CI (`--publish auto`, asked after every platform named in its `before`'s
    absence: a CI that also sets another's variables names that one in `before`);
    `ci_variables` are the variables whose being set makes a run a CI run for the trust model.
    `token_env` are the token's variables, the first set wins.
    """

    name: str
    title: str
    detect: Callable[[Mapping[str, str]], bool]
    locate: str
    client: str
    token_env: tuple[str, ...]
    ci_variables: tuple[str, ...] = ()
    before: tuple[str, ...] = ()
    request_head: str | None = None
    """The Git ref of request `{n}`'s head on the remote (None: the platform has none)."""
    full_history: str = "a full clone"
    """How its CI checks out the whole history (a shallow clone has no merge base to diff)."""
    noun: str = "pull request"
    suggestion: Callable[[int], str] | None = None
    """The info string of a one-click suggestion fence replacing N lines (None: prose only)."""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name) or self.name in RESERVED:
            raise PlatformPluginError(
                f"platform name {self.name!r} is not a lowercase word of 2 to 31 letters, digits "
                "or dashes (nor off or auto)"
            )
        for what in ("locate", "client"):
            if ":" not in getattr(self, what):
                raise PlatformPluginError(f"platform {self.name}: {what} is not module:attribute")
        if not self.token_env:
            raise PlatformPluginError(f"platform {self.name}: no token variable")

    def _load(self, what: str) -> Any:
        module, _, name = getattr(self, what).partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise PlatformPluginError(
                f"the {self.name} platform's {what} {getattr(self, what)} cannot be loaded: {exc}"
            ) from None

    def locator(self) -> Callable[..., Any]:
        """Its `locate` function, imported."""
        found: Callable[..., Any] = self._load("locate")
        return found

    def make_client(self, ref: Any, token: str, timeout_s: float) -> Any:
        """Its `PlatformClient` for `ref` (the caller types it: the registry is below it)."""
        return self._load("client")(ref, token, timeout_s)


@cache
def builtin() -> Mapping[str, PlatformSpec]:
    """The built-in platforms by name: the entry points reviewflow's own distribution declares in
    the group (pyproject.toml), each a package `reviewflow/publish/<platform>/` holding its spec.
    One distribution's metadata is read, not every installed one's."""
    try:
        declared = distribution(DISTRIBUTION).entry_points.select(group=ENTRY_POINT_GROUP)
    except PackageNotFoundError:
        raise ConfigError("reviewflow is not installed (run `make install`)") from None
    found: dict[str, PlatformSpec] = {}
    for entry in sorted(declared, key=lambda e: e.name):
        spec = entry.load()
        if isinstance(spec, PlatformSpec) and spec.name == entry.name:
            found[spec.name] = spec
    return found


@cache
def _installed(path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """The group's entry points on import path `path`: read once a process (reading every
    installed distribution's metadata costs milliseconds, and the trust model asks at every
    start), again only when the path changes."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def _plugins() -> dict[str, EntryPoint]:
    """The installed plugins' entry points by platform name (none loaded; built-ins win)."""
    known = builtin()
    return {ep.name: ep for ep in _installed(tuple(sys.path)) if ep.name not in known}


def _load_plugin(name: str, entry: EntryPoint) -> PlatformSpec:
    return load_spec(entry, name, PlatformSpec, "platform", PlatformPluginError)


def _loadable() -> dict[str, PlatformSpec]:
    """The built-in platforms and every plugin that loads (one that cannot is named when it is
    configured, never where every platform is only listed: `auto`, the trust model, tokens)."""
    found = dict(builtin())
    for name, entry in sorted(_plugins().items()):
        try:
            found[name] = _load_plugin(name, entry)
        except PlatformPluginError:
            continue
    return found


def platforms() -> dict[str, PlatformSpec]:
    """Every platform, in the order `--publish auto` asks them: by name, except that a
    platform comes before those its `before` names."""
    every = _loadable()
    waiting = sorted(every)
    ordered: dict[str, PlatformSpec] = {}
    while waiting:
        ready = next(
            (n for n in waiting if not any(n in every[o].before for o in waiting if o != n)),
            waiting[0],  # a cycle of `before`s: by name
        )
        ordered[ready] = every[ready]
        waiting.remove(ready)
    return ordered


def platform_names() -> tuple[str, ...]:
    """Every platform that can be published to: the built-in ones, then the plugins', by name."""
    return (*sorted(builtin()), *sorted(_plugins()))


def find_platform(name: str) -> PlatformSpec | None:
    """The spec of platform `name`, or None when neither built in nor installed. A built-in
    name is answered without reading the installed packages."""
    if name in builtin():
        return builtin()[name]
    entry = _plugins().get(name)
    return None if entry is None else _load_plugin(name, entry)


def platform_spec(name: str) -> PlatformSpec:
    """The spec of a configured platform (the config has checked it exists)."""
    spec = find_platform(name)
    if spec is None:
        raise ConfigError(f"unknown platform {name!r} (accepted: {', '.join(platform_names())})")
    return spec


def token_variables() -> tuple[str, ...]:
    """Every platform's token variables (kept out of what a review's children inherit)."""
    return tuple(name for spec in platforms().values() for name in spec.token_env)


def ci_variables(*, plugins: bool = True) -> tuple[str, ...]:
    """Every platform's CI variables, each once, built-ins first (without `plugins`, the
    built-ins' alone: no installed package's metadata read)."""
    specs = (_loadable() if plugins else builtin()).values()
    return tuple(dict.fromkeys(n for spec in specs for n in spec.ci_variables))
