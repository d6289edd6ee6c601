"""The effective config: defaults < config.yaml < REVIEWFLOW_MODEL_* < review flags, each value
known by where it was set; `inspect_config` records problems instead of raising them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import SecretStr, ValidationError

from reviewflow.config.messages import ENV_SOURCE, FLAGS_SOURCE, describe_validation_error
from reviewflow.config.platforms import SETTINGS_FROM_ENV, Platform, model_platform
from reviewflow.config.protocols import protocol_spec
from reviewflow.config.schema import ENV_PREFIX, Config, ModelSettings
from reviewflow.config.sources import (
    Origins,
    env_origins,
    file_origins,
    flag_origins,
    validate_leniently,
)
from reviewflow.errors import ConfigError


def config_path(home: Path) -> Path:
    return home / "config.yaml"


class _ConfigLoader(yaml.SafeLoader):
    """YAML with only true and false as booleans (YAML 1.2), so `console: off`, `json: off`
    and `language: no` stay text; a boolean setting still takes off/no/on/yes (pydantic)."""


_BOOL = "tag:yaml.org,2002:bool"
_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(text: str) -> Any:
    """A config value or file, as YAML 1.2 reads it (`off` is text, `false` is false)."""
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader: no arbitrary objects


# PyYAML's words for what it saw, in the words of someone editing the file.
_YAML_WORDS = (
    ("'<stream end>'", "the end of the file"),
    ("<stream end>", "the end of the file"),
    ("end of stream", "end of the file"),
    ("<block end>", "the end of the indented block"),
)
_YAML_CONTEXTS = {
    "while parsing a flow sequence": "the [ list",
    "while parsing a flow mapping": "the { mapping",
    "while parsing a block collection": "the indented block",
    "while parsing a block mapping": "the indented block",
    "while scanning a quoted scalar": "the quoted text",
}


def yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """Where YAML found a problem in `text` and what it was, e.g. ` line 2: mapping values
    are not allowed here`, or ` at its end: expected ',' or ']', but got the end of the file
    (the [ list started on line 2)`."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    lines = len(text.splitlines())
    where = ""
    if mark is not None:
        where = f" line {mark.line + 1}" if mark.line < lines else " at its end"
    if not problem:
        return where
    for word, plain in _YAML_WORDS:
        problem = problem.replace(word, plain)
    started = getattr(exc, "context_mark", None)
    what = _YAML_CONTEXTS.get(getattr(exc, "context", None) or "")
    if what and started is not None and (mark is None or started.line != mark.line):
        problem += f" ({what} started on line {started.line + 1})"
    return f"{where}: {problem}"


def read_config_file(path: Path) -> dict[str, Any]:
    """The raw mapping stored in a config file ({} when the file does not exist)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read config {path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML in {path}{yaml_problem(exc, text)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {path}: the top level must be a mapping")
    return data


def build_config(
    data: Mapping[str, Any], source: str, origins: Mapping[str, str] | None = None
) -> Config:
    """Validate a raw mapping, turning the first problem into a one-line error naming its key
    (as set in `origins`: a file's key, a variable, a flag)."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source, origins)) from None


ENV_FIELDS = (
    "protocol",
    "name",
    "endpoint",
    "timeout",
    "api_key",
    "platform",
    "region",
    "project",
    "deployment",
    "api_version",
)


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """Model settings taken from `REVIEWFLOW_MODEL_*` variables."""
    out: dict[str, Any] = {}
    for field in ENV_FIELDS:
        value = env.get(ENV_PREFIX + field.upper())
        if value:
            out[field] = value
    return out


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(
    home: Path,
    env: Mapping[str, str],
    flags: Mapping[str, Any] | None = None,
    named: Mapping[str, str] | None = None,
) -> Config:
    """The effective config: defaults < file < environment < flags (`{"review": {...}}` form;
    `named`: where those of its keys came from that are not flags, a deployment's parameters).
    The first problem is a ConfigError naming where each value it mentions was set."""
    return _load(home, env, flags or {}, None, named or {}).config


@dataclass
class Inspection:
    """The effective config with each setting that has a problem left at its default, the
    problems by dotted key, and the values as they were set (file and environment)."""

    config: Config
    problems: dict[str, str]
    values: dict[str, Any]


def inspect_config(home: Path, env: Mapping[str, str]) -> Inspection:
    """The config `config show` and `config set` work with: every problem recorded, none
    raised (a file that is not YAML still is: there are no values to show)."""
    return _load(home, env, {}, {})


def _load(
    home: Path,
    env: Mapping[str, str],
    flags: Mapping[str, Any],
    problems: dict[str, str] | None,
    named: Mapping[str, str] | None = None,
) -> Inspection:
    path = config_path(home)
    file_data = read_config_file(path)
    origins = file_origins(file_data, path)
    file_model = _layer(file_data, str(path), origins, problems).model
    overrides = env_overrides(env)
    origins.update(env_origins(overrides))
    data = merge(file_data, {"model": overrides})
    _layer(data, ENV_SOURCE, origins, problems)
    values = data
    origins.update({**flag_origins(flags), **(named or {})})
    data = merge(data, flags)
    if problems is None:
        config = build_config(data, FLAGS_SOURCE, origins)
    else:
        config = validate_leniently(data, FLAGS_SOURCE, origins, problems)
    model = config.model
    where = (model.protocol, model.platform)
    if "api_key" not in overrides and where != (file_model.protocol, file_model.platform):
        model.api_key = None  # the file's key belongs to the file's protocol and platform
    if model.api_key is None:
        key = _first(env, key_variables(model))
        model.api_key = SecretStr(key) if key else None
    if model.platform != Platform.DIRECT:
        _platform_defaults(model, env, problems)
    return Inspection(config, {} if problems is None else problems, values)


def _layer(
    data: Mapping[str, Any], source: str, origins: Origins, problems: dict[str, str] | None
) -> Config:
    """The layers so far, each bad value named where it was set (raised, or recorded in
    `problems`); two values that do not go together are judged only once every layer is in."""
    found: dict[str, str] = {}
    config = validate_leniently(data, source, origins, found, conflicts=False)
    if problems is not None:
        problems.update({key: text for key, text in found.items() if key not in problems})
    elif found:
        raise ConfigError(next(iter(found.values())))
    return config


def key_variables(model: ModelSettings) -> tuple[str, ...]:
    """The usual variables of the API key for these settings' protocol or platform."""
    if model.platform == Platform.DIRECT:
        return protocol_spec(model.protocol).key_env
    return model_platform(model.platform).key_env


def _platform_defaults(
    model: ModelSettings, env: Mapping[str, str], problems: dict[str, str] | None
) -> None:
    """Region, project, endpoint and api-version from the platform's own variables, where
    the config leaves them unset (a bad value is named by its variable: raised, or recorded
    in `problems`)."""
    spec = model_platform(model.platform)
    for field in SETTINGS_FROM_ENV:
        names = spec.env.get(field, ())
        value = _first(env, names)
        if value and getattr(model, field) is None:
            try:
                setattr(model, field, value)
            except ValidationError:
                name = next(n for n in names if env.get(n))
                accepted = ModelSettings.model_fields[field].description
                problem = f"invalid value for {name}: {value!r} (accepted: {accepted})"
                if problems is None:
                    raise ConfigError(problem) from None
                problems.setdefault(f"model.{field}", problem)


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((env[name] for name in names if env.get(name)), None)


def config_as_dict(config: Config, *, redact: bool = True) -> dict[str, Any]:
    data = config.model_dump(mode="json", by_alias=True)
    key = config.model.api_key
    if key is None:
        data["model"]["api_key"] = None
    else:
        data["model"]["api_key"] = (
            redact_secret(key.get_secret_value()) if redact else (key.get_secret_value())
        )
    data["model"]["endpoint"] = config.model.effective_endpoint
    return data


def redact_secret(value: str) -> str:
    return "********" if value else ""
