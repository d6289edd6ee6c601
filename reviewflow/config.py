"""Typed configuration: defaults < ~/.reviewflow/config.yaml < REVIEWFLOW_MODEL_* < review flags."""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationError,
    field_validator,
)

from reviewflow.errors import ConfigError
from reviewflow.fsutil import atomic_write_text

PLACEHOLDER_MODEL = "configured-model"
ENV_PREFIX = "REVIEWFLOW_MODEL_"
KEY_FALLBACK_ENV = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
KEY_ENV_VARS = (
    ENV_PREFIX + "API_KEY",
    *(name for names in KEY_FALLBACK_ENV.values() for name in names),
)
DEFAULT_ENDPOINTS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}

MAX_DURATION = 86400.0  # one day: longer is a typo, not a timeout
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


_HOST_LABELS = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def check_endpoint(url: str) -> str:
    """`url` if it is a usable http(s) base URL without credentials in it; ValueError if not."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError("endpoint is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("endpoint must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("endpoint must not hold credentials (use model.api_key)")
    if any(ch.isspace() for ch in url) or not _valid_host(parts.hostname):
        raise ValueError("endpoint is not a valid URL")
    return url


def _valid_host(host: str) -> bool:
    if ":" in host:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return False
        return True
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    labels = ascii_host.rstrip(".").split(".")
    return all(_HOST_LABELS.fullmatch(label) for label in labels)


def parse_duration(value: object) -> float:
    """Seconds from a number or a Go-style duration such as `120s`, `2m`, `1m30s`, `500ms`."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 120s")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and _DURATION_PART.sub("", text) == "":
            unit = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
            seconds = sum(float(n) * unit[u] for n, u in _DURATION_PART.findall(text))
        else:
            raise ValueError(f"invalid duration {value!r} (use e.g. 120s, 2m, 1m30s)")
    else:
        raise ValueError("expected a duration such as 120s")
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_DURATION:
        raise ValueError(f"duration must be positive and at most {MAX_DURATION:g}s")
    return seconds


def format_duration(seconds: float) -> str:
    return f"{seconds:g}s"


Duration = Annotated[
    float, BeforeValidator(parse_duration), PlainSerializer(format_duration, return_type=str)
]


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Protocol(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


class ConsoleMode(StrEnum):
    DETAILED = "detailed"
    SUMMARY = "summary"
    OFF = "off"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ReviewSettings(_Section):
    concurrency: int = Field(4, ge=1, le=64)
    context_lines: int = Field(3, ge=0, le=1000)
    max_tool_rounds: int = Field(30, ge=1, le=500)
    max_context_tool_calls: int = Field(10, ge=0, le=200)
    max_chunk_tokens: int = Field(12000, ge=1000, le=2_000_000)
    confidence_threshold: float = Field(0.75, ge=0.0, le=1.0)
    fail_on: list[Severity] = Field(default_factory=lambda: [Severity.CRITICAL, Severity.HIGH])

    @field_validator("fail_on", mode="before")
    @classmethod
    def _split_fail_on(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value


class ModelSettings(_Section):
    protocol: Protocol = Protocol.OPENAI
    name: str = Field(PLACEHOLDER_MODEL, min_length=1)
    endpoint: str | None = None
    api_key: SecretStr | None = None
    timeout: Duration = 120.0

    @field_validator("api_key", mode="before")
    @classmethod
    def _clean_key(cls, value: object) -> object:
        """Strip pasted whitespace; refuse control characters (without echoing the key)."""
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if value is None or not isinstance(value, str):
            return value
        value = value.strip()
        if not all("!" <= ch <= "~" for ch in value):
            raise ValueError("the API key must be printable ASCII without spaces")
        return value or None

    @field_validator("endpoint")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        return check_endpoint(str(value)).rstrip("/")

    @property
    def effective_endpoint(self) -> str:
        return self.endpoint or DEFAULT_ENDPOINTS[self.protocol.value]


class OutputSettings(_Section):
    json_path: str | None = Field("review-report.json", alias="json")
    markdown: str | None = "review-report.md"
    sarif: str | None = "review-report.sarif"
    console: ConsoleMode = ConsoleMode.DETAILED
    language: str = Field("en-US", pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
    progress: bool = True
    report_dir: str | None = None

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)


class Config(_Section):
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    output: OutputSettings = Field(default_factory=OutputSettings)


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The reviewflow home: `REVIEWFLOW_HOME`, else `~/.reviewflow`."""
    env = os.environ if env is None else env
    override = env.get("REVIEWFLOW_HOME")
    return Path(override).expanduser() if override else Path.home() / ".reviewflow"


def config_path(home: Path) -> Path:
    return home / "config.yaml"


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
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"invalid YAML in {path}{where}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {path}: the top level must be a mapping")
    return data


def build_config(data: Mapping[str, Any], source: str) -> Config:
    """Validate a raw mapping, turning the first problem into a one-line error naming its key."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source)) from None


def describe_validation_error(exc: ValidationError, source: str) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown config key '{key}' in {source}"
    message = err["msg"].removeprefix("Value error, ")
    return f"invalid value for '{key}' in {source}: {message}"


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """Model settings taken from `REVIEWFLOW_MODEL_*` variables."""
    out: dict[str, Any] = {}
    for field in ("protocol", "name", "endpoint", "timeout", "api_key"):
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
) -> Config:
    """The effective config: defaults < file < environment < flags (`{"review": {...}}` form)."""
    path = config_path(home)
    file_data = read_config_file(path)
    build_config(file_data, str(path))
    data = merge(file_data, {"model": env_overrides(env)})
    build_config(data, "REVIEWFLOW_MODEL_* environment")
    data = merge(data, flags or {})
    config = build_config(data, "command-line flags")
    file_protocol = str((file_data.get("model") or {}).get("protocol", Protocol.OPENAI.value))
    if "api_key" not in env_overrides(env) and config.model.protocol.value != file_protocol:
        config.model.api_key = None  # the file's key belongs to the file's protocol
    if config.model.api_key is None:
        for name in KEY_FALLBACK_ENV[config.model.protocol.value]:
            if env.get(name):
                config.model.api_key = SecretStr(env[name])
                break
    return config


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


def known_keys() -> list[str]:
    keys = []
    for section, model in (
        ("review", ReviewSettings),
        ("model", ModelSettings),
        ("output", OutputSettings),
    ):
        for name, info in model.model_fields.items():
            keys.append(f"{section}.{info.alias or name}")
    return keys


def get_value(config: Config, key: str) -> Any:
    """One effective value by dotted key; the API key is returned in clear."""
    if key not in known_keys():
        raise ConfigError(f"unknown config key '{key}' (known: {', '.join(known_keys())})")
    section, name = key.split(".", 1)
    return config_as_dict(config, redact=False)[section][name]


# Values taken as typed: never parsed as YAML (a key such as `@abc` or `- x` stays a string).
_TEXT_KEYS = frozenset(
    "model.name model.api_key model.endpoint model.timeout output.language output.json "
    "output.markdown output.sarif output.report_dir".split()
)


def _parse_cli_value(key: str, raw: str) -> Any:
    """The value `config set` stores: text as typed, or a YAML scalar/list; "" unsets."""
    if not raw.strip():
        return None
    if key in _TEXT_KEYS:
        return raw
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ConfigError(f"invalid value for '{key}': not a valid value") from None


def set_value(home: Path, key: str, raw: str) -> Path:
    """Validate `raw` for `key`, store it in the config file (atomically, mode 0600)."""
    if key not in known_keys():
        raise ConfigError(f"unknown config key '{key}' (known: {', '.join(known_keys())})")
    path = config_path(home)
    data = read_config_file(path)
    section, name = key.split(".", 1)
    updated = merge(data, {section: {name: _parse_cli_value(key, raw)}})
    build_config(updated, "value")
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(path, yaml.safe_dump(updated, sort_keys=False, allow_unicode=True))
    return path
