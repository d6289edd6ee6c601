"""Where each setting's value came from (a file's key, a variable, a flag), so an error names
the true source of each value it mentions; and validation that keeps going past a bad value, so
`config show` and `config set` still run and show the problem beside the value."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reviewflow.config.messages import describe_error, flag_label
from reviewflow.config.schema import ENV_PREFIX, Config
from reviewflow.errors import ConfigError

Origins = dict[str, str]  # dotted key -> where its value was set, in the user's words


def file_origins(data: Mapping[str, Any], path: Path) -> Origins:
    """`'model.platform' in /home/me/.reviewflow/config.yaml` for every key the file sets."""
    out: Origins = {}
    for section, values in data.items():
        names = values if isinstance(values, Mapping) else {}
        for name in names:
            out[f"{section}.{name}"] = f"'{section}.{name}' in {path}"
        if not names:
            out[str(section)] = f"'{section}' in {path}"
    return out


def env_origins(overrides: Mapping[str, Any]) -> Origins:
    """`REVIEWFLOW_MODEL_PROTOCOL` for each model setting taken from the environment."""
    return {f"model.{field}": ENV_PREFIX + field.upper() for field in overrides}


def flag_origins(flags: Mapping[str, Any]) -> Origins:
    """`--model` for each setting a review flag set (`{"review": {...}}` form)."""
    return {key: flag_label(key) for key in _keys(flags)}


def parameter_origins(values: Mapping[str, Any], parameter: str) -> Origins:
    """`'model.name' in the 'overrides' parameter` for each setting a deployment's parameter
    holds (`{"review": {...}}` form)."""
    return {key: f"'{key}' in the '{parameter}' parameter" for key in _keys(values)}


def _keys(values: Mapping[str, Any]) -> list[str]:
    return [
        f"{section}.{name}"
        for section, names in values.items()
        if isinstance(names, Mapping)
        for name in names
    ]


def problem_keys(err: Any) -> list[str]:
    """The dotted keys one validation error is about (a conflict is about two)."""
    parts = [str(p) for p in err["loc"] if not isinstance(p, int)]
    keys = [".".join(parts[:2])]
    if err["type"] == "conflict":
        keys.append(err["ctx"]["other"])
    return keys


def validate_leniently(
    data: Mapping[str, Any],
    source: str,
    origins: Origins,
    problems: dict[str, str],
    *,
    conflicts: bool = True,
) -> Config:
    """`data` as a Config, each setting with a problem left at its default and the problem
    recorded under its key(s) in `problems` (the first one found for a key is kept). Without
    `conflicts`, two values that do not go together are not a problem (yet: a later layer,
    a flag say, may settle it)."""
    work = copy.deepcopy(dict(data))
    for _ in range(256):  # each round drops at least one key; a config has fewer
        try:
            return Config.model_validate(work)
        except ValidationError as exc:
            for err in exc.errors():
                keys = problem_keys(err)
                for key in keys if conflicts or err["type"] != "conflict" else ():
                    problems.setdefault(key, describe_error(err, source, origins))
                _drop(work, keys[0])
    raise ConfigError(f"the settings in {source} cannot be read")


def _drop(data: dict[str, Any], key: str) -> None:
    section, _, name = key.partition(".")
    values = data.get(section)
    if name and isinstance(values, Mapping) and name in values:
        data[section] = {k: v for k, v in values.items() if k != name}
    else:
        data.pop(section, None)


def value_as_set(data: Mapping[str, Any], key: str) -> Any:
    """The value `key` was given in `data` (None when unset)."""
    section, _, name = key.partition(".")
    values = data.get(section)
    return values.get(name) if isinstance(values, Mapping) else None
