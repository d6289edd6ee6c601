"""`config show`: the effective configuration as YAML, the API key redacted, and each setting
with a problem shown as it was set with the problem beside it (`# problem: ...`)."""

from __future__ import annotations

from typing import Any

import yaml

from reviewflow.config.load import Inspection, config_as_dict, redact_secret
from reviewflow.config.sources import value_as_set


def render_config(inspection: Inspection) -> str:
    """The YAML `config show` prints; a problem of a key it does not show (an unknown one) is
    a comment line at the end of its section."""
    data = config_as_dict(inspection.config)
    problems = inspection.problems
    lines: list[str] = []
    for section, values in data.items():
        lines.append(f"{section}:")
        for name, value in values.items():
            key = f"{section}.{name}"
            if key in problems:
                shown = _as_set(inspection, key, value)
                lines.append(f"  {name}: {shown}  # problem: {_one_line(problems[key])}")
            else:
                lines += _block({name: value})
        for key, problem in problems.items():
            head, _, name = key.partition(".")
            if head == section and name not in values:
                lines.append(f"  # {name}: problem: {_one_line(problem)}")
    for key, problem in problems.items():
        if key.partition(".")[0] not in data:
            lines.append(f"# {key}: problem: {_one_line(problem)}")
    return "\n".join(lines) + "\n"


def _as_set(inspection: Inspection, key: str, effective: Any) -> str:
    """The value as the file or environment set it (the API key never shown)."""
    raw = value_as_set(inspection.values, key)
    if raw is None:
        raw = effective
    if key == "model.api_key":
        return redact_secret(str(raw)) if raw else "null"
    return _flow(raw)


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _block(mapping: dict[str, Any]) -> list[str]:
    text = yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)
    return [f"  {line}" for line in text.splitlines()]


def _one_line(text: str) -> str:
    return " ".join(text.split())
