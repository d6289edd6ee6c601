"""`config get` and `config set`: dotted keys, values as typed, atomic storage; a stored
problem elsewhere never stops the fix of another key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reviewflow.config.load import (
    config_as_dict,
    config_path,
    load_yaml,
    merge,
    read_config_file,
)
from reviewflow.config.messages import known_keys, unknown_key
from reviewflow.config.schema import Config
from reviewflow.config.sources import file_origins, validate_leniently
from reviewflow.errors import ConfigError
from reviewflow.fsutil import private_dirs, write_output


def get_value(config: Config, key: str) -> Any:
    """One effective value by dotted key; the API key is returned in clear."""
    if key not in known_keys():
        raise ConfigError(unknown_key(key))
    section, name = key.split(".", 1)
    return config_as_dict(config, redact=False)[section][name]


# Values taken as typed: never parsed as YAML (a key such as `@abc` or `- x` stays a string).
_TEXT_KEYS = frozenset(
    "model.name model.api_key model.api_key_block model.endpoint model.timeout output.language "
    "model.region model.project model.deployment model.api_version "
    "output.json output.markdown output.sarif output.gitlab output.report_dir "
    "review.dask_address review.shared_store publish.repo publish.api_url publish.token_block "
    "review.instructions review.sast_rules review.sast_semgrep review.sast_timeout "
    "review.verify_model".split()
)


def _parse_cli_value(key: str, raw: str) -> Any:
    """The value `config set` stores: text as typed, or a YAML scalar/list; "" unsets."""
    if not raw.strip():
        return None
    if key in _TEXT_KEYS:
        return raw
    try:
        return load_yaml(raw)
    except yaml.YAMLError:
        raise ConfigError(f"invalid value for '{key}': not a valid value") from None


_REPORT_FILES = frozenset({"output.json", "output.markdown", "output.sarif", "output.gitlab"})


def _check_path(key: str, value: Any) -> None:
    """A report file that is a folder, or a report folder that is a file, is refused now
    (relative report files are placed in each review's own folder: only absolute ones are
    checked)."""
    if not isinstance(value, str) or value in ("-", "off"):
        return
    path = Path(value).expanduser()
    if key in _REPORT_FILES and path.is_absolute() and path.is_dir():
        raise ConfigError(
            f"invalid value for '{key}': {value} is a directory "
            "(accepted: a file path, - for stdout, or off)"
        )
    if key == "output.report_dir" and path.exists() and not path.is_dir():
        raise ConfigError(
            f"invalid value for '{key}': {value} is not a directory (accepted: a directory path)"
        )


def set_value(home: Path, key: str, raw: str) -> Path:
    """Validate `raw` for `key`, store it in the config file (atomically, mode 0600). Problems
    of other stored settings do not stop it (so they can be fixed one by one); a value that
    does not go with a stored one does. An empty value unsets a key, an unknown stored one too."""
    path = config_path(home)
    data = read_config_file(path)
    section, _, name = key.partition(".")
    if key not in known_keys():
        if raw.strip() or not _stored(data, section, name):
            raise ConfigError(unknown_key(key))
        return _write(home, path, _without(data, section, name))
    value = _parse_cli_value(key, raw)
    updated = merge(data, {section: {name: value}})
    problems: dict[str, str] = {}
    origins = file_origins(data, path)
    origins.pop(key, None)  # the value being set is the one typed
    config = validate_leniently(updated, "", origins, problems)
    if key in problems and value is None and _stored(data, section, name):
        updated, problems = _without(data, section, name), {}  # unset: back to the default
        config = validate_leniently(updated, "", origins, problems)
    if key in problems:
        raise ConfigError(problems[key])
    if value is not None and key not in _TEXT_KEYS:  # as validated: `yes` is stored as true
        updated = merge(data, {section: {name: config_as_dict(config)[section][name]}})
    _check_path(key, value)
    return _write(home, path, updated)


def _stored(data: dict[str, Any], section: str, name: str) -> bool:
    values = data.get(section)
    return isinstance(values, dict) and name in values


def _without(data: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    values = {k: v for k, v in data[section].items() if k != name}
    return {k: v for k, v in {**data, section: values}.items() if v != {} or k != section}


def _write(home: Path, path: Path, data: dict[str, Any]) -> Path:
    private_dirs(home)
    write_output(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path
