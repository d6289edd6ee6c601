"""Loading an installed plugin's entry point, for every registry that takes plugins (model
protocols, model platforms, publishing platforms): the spec it names, checked to be the kind
its group expects under the name it is registered by, or one line saying why not."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import TypeVar

from reviewflow.errors import ConfigError

T = TypeVar("T")


def load_spec(
    entry: EntryPoint, name: str, kind: type[T], what: str, error: type[ConfigError]
) -> T:
    """The `kind` that `entry` (the `what` plugin `name`) names, else `error` in one line."""
    where = f"the {what} plugin {name} ({entry.value})"
    try:
        spec = entry.load()
    except (ImportError, AttributeError) as exc:
        raise error(f"{where} cannot be loaded: {exc}") from None
    if not isinstance(spec, kind) or getattr(spec, "name", None) != name:
        raise error(f"{where} is not a {kind.__name__} named {name!r}")
    return spec
