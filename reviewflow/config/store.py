"""`config get` and `config set`: dotted keys, values as typed, atomic storage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reviewflow.config.load import (
    build_config,
    config_as_dict,
    config_path,
    load_yaml,
    merge,
    read_config_file,
)
from reviewflow.config.messages import known_keys
from reviewflow.config.schema import Config
from reviewflow.errors import ConfigError
from reviewflow.fsutil import private_dirs, write_output


def get_value(config: Config, key: str) -> Any:
    """One effective value by dotted key; the API key is returned in clear."""
    if key not in known_keys():
        raise ConfigError(f"unknown config key '{key}' (known: {', '.join(known_keys())})")
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
    """Validate `raw` for `key`, store it in the config file (atomically, mode 0600)."""
    if key not in known_keys():
        raise ConfigError(f"unknown config key '{key}' (known: {', '.join(known_keys())})")
    path = config_path(home)
    data = read_config_file(path)
    section, name = key.split(".", 1)
    value = _parse_cli_value(key, raw)
    updated = merge(data, {section: {name: value}})
    config = build_config(updated, "")
    if value is not None and key not in _TEXT_KEYS:  # as validated: `yes` is stored as true
        updated = merge(data, {section: {name: config_as_dict(config)[section][name]}})
    _check_path(key, value)
    private_dirs(home)
    write_output(path, yaml.safe_dump(updated, sort_keys=False, allow_unicode=True))
    return path
