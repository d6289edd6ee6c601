"""Config errors in the user's terms: the key, the bad value and what is accepted."""

from __future__ import annotations

import difflib
import enum
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from reviewflow.config.schema import ENV_PREFIX, Config

_SECRET_KEYS = frozenset({"model.api_key"})
ENV_SOURCE = "environment"
FLAGS_SOURCE = "flags"
# Flags whose name is not the key's own name.
_FLAG_NAMES = {
    "model.name": "--model",
    "output.json": "--json",
    "publish.target": "--publish",
    "publish.repo": "--platform-repo",
}


def describe_validation_error(
    exc: ValidationError, source: str, origins: Mapping[str, str] | None = None
) -> str:
    """One line for the first problem. `source`: a file, ENV_SOURCE, FLAGS_SOURCE or "" (set);
    `origins`: where each dotted key's value came from (`config.sources`), named instead."""
    return describe_error(exc.errors()[0], source, origins or {})


def describe_error(err: Any, source: str, origins: Mapping[str, str]) -> str:
    """One line for one of pydantic's errors (see `describe_validation_error`)."""
    parts = [str(p) for p in err["loc"] if not isinstance(p, int)]  # a list item names its list
    key = ".".join(parts)
    where = f" in {source}" if source not in ("", ENV_SOURCE, FLAGS_SOURCE) else ""
    if err["type"] == "extra_forbidden":
        return unknown_key(key, where)
    if err["type"] == "conflict":  # a value that does not go with another key's value
        return _conflict(err, key, source, origins)
    label = origins.get(key)
    if label is not None:
        where = ""
    if err["type"] == "missing" and len(parts) > 1:  # `model.price: {input: 2.5}`
        parent = ".".join(parts[:-1])
        info = _field(parts[:-1]) if len(parts) == 3 else None
        accepted = f"; {info.description}" if info is not None and info.description else ""
        name = origins.get(parent) or _label(parent, source)
        return (
            f"invalid value for {name}{'' if parent in origins else where}: a YAML mapping "
            f"without '{parts[-1]}' (accepted: a mapping that sets {parts[-1]}{accepted})"
        )
    subject = f"invalid value for {label or _label(key, source)}{where}"
    section = _section(parts[0]) if len(parts) == 1 else None
    if section is not None:  # `model: gpt-4o` where a section belongs
        fields = _field_names(section)
        example = "name" if "name" in fields else fields[0]
        return (
            f"{subject}: {_show(err['input'])} (accepted: a section with the keys "
            f"{', '.join(fields)}; e.g. {key}: {{{example}: ...}})"
        )
    if key in _SECRET_KEYS:  # never echo a key
        return f"{subject}: {_accepted(err, parts)}"
    return f"{subject}: {_show(err['input'])} ({_accepted(err, parts)})"


def _conflict(err: Any, key: str, source: str, origins: Mapping[str, str]) -> str:
    """Two settings that do not go together, each named where it was set."""
    ctx = err["ctx"]
    other = ctx["other"]
    here = origins.get(key) or _where(key, source)
    there = origins.get(other) or _where(other, source)
    return (
        f"conflicting settings: {here} is {_show(err['input'])} and {there} is "
        f"{_show(ctx['value'])}: {ctx['reason']}; change or unset one of them"
    )


def _where(key: str, source: str) -> str:
    label = _label(key, source)
    return f"{label} in {source}" if source not in ("", ENV_SOURCE, FLAGS_SOURCE) else label


def unknown_key(key: str, where: str = "") -> str:
    """`unknown config key 'review.concurency' in PATH (did you mean 'review.concurrency'?)`;
    with no close key, the section's keys (or the sections), never all of them."""
    section, _, name = key.partition(".")
    model = _section(section)
    if model is not None:  # a known section: the closest of its keys, by name
        names = difflib.get_close_matches(name, _field_names(model), n=1, cutoff=0.75)
        close = [f"{section}.{names[0]}"] if names else []
    else:
        close = difflib.get_close_matches(key, known_keys(), n=1, cutoff=0.75)
    if close:
        return f"unknown config key '{key}'{where} (did you mean '{close[0]}'?)"
    if model is not None:
        return f"unknown config key '{key}'{where} (the {section} keys: {_keys_of(model)})"
    sections = ", ".join(name for name in Config.model_fields if _section(name) is not None)
    return (
        f"unknown config key '{key}'{where} (keys are SECTION.NAME, the sections: {sections}; "
        "`reviewflow config show` lists every key)"
    )


def _keys_of(model: type[BaseModel]) -> str:
    return ", ".join(_field_names(model))


def flag_label(key: str) -> str:
    """The review flag that sets `key` (`--model` for model.name, `--concurrency`...)."""
    return _FLAG_NAMES.get(key, "--" + key.partition(".")[2].replace("_", "-"))


def _label(key: str, source: str) -> str:
    """The key as the user wrote it: a flag, an environment variable, or the dotted key."""
    section, _, name = key.partition(".")
    if source == FLAGS_SOURCE and name:
        return flag_label(key)
    if source == ENV_SOURCE and section == "model" and name:
        return ENV_PREFIX + name.upper()
    return f"'{key}'"


def known_keys() -> list[str]:
    """Every dotted config key, in schema order."""
    keys: list[str] = []
    for section in Config.model_fields:
        model = _section(section)
        if model is not None:
            keys.extend(f"{section}.{name}" for name in _field_names(model))
    return keys


def _section(name: str) -> type[BaseModel] | None:
    info = Config.model_fields.get(name)
    model = info.annotation if info is not None else None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _field_names(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _field(parts: list[str]) -> FieldInfo | None:
    model = _section(parts[0]) if len(parts) == 2 else None
    if model is None:
        return None
    for name, info in model.model_fields.items():
        if parts[1] in (name, info.alias):
            return info
    return None


def _show(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict | list):
        return "a YAML mapping" if isinstance(value, dict) else "a YAML list"
    return str(value)


def _accepted(err: Any, parts: list[str]) -> str:
    """What the key accepts: its own description, else read from its type and bounds."""
    info = _field(parts)
    if info is not None and info.description:
        return f"accepted: {info.description}"
    if err["type"] == "value_error":  # our validators' messages are already in user terms
        return str(err["msg"]).removeprefix("Value error, ")
    if info is None:
        return f"accepted: {err['msg']}"
    return f"accepted: {_describe_type(info)}"


def _describe_type(info: FieldInfo) -> str:
    annotation = info.annotation
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is list and args and _is_enum(args[0]):
        members = [member.value for member in args[0]]
        return f"one or more of {', '.join(members)}, e.g. {members[0]},{members[1]}"
    if _is_enum(annotation):
        members = [member.value for member in annotation]  # type: ignore[union-attr]
        return f"{', '.join(members[:-1])} or {members[-1]}"
    if annotation is bool:
        return "true or false"
    bounds = _bounds(info)
    kind = "an integer" if annotation is int else "a number" if annotation is float else None
    if kind is not None and bounds is not None:
        return f"{kind} from {_number(bounds[0])} to {_number(bounds[1])}"
    return kind or "text"


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _is_enum(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, enum.Enum)


def _bounds(info: FieldInfo) -> tuple[float, float] | None:
    low = high = None
    for item in info.metadata:  # annotated_types.Ge / Le, as Field(ge=..., le=...) stores them
        low = getattr(item, "ge", low)
        high = getattr(item, "le", high)
    if low is None or high is None:
        return None
    return float(low), float(high)
