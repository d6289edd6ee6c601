"""What the warm review process does once, so that each review it forks need not.

A review child pays, besides its flow run, for whatever the first review in a process builds:
Prefect's settings and logging configuration read again for the review's environment
(~0.3 s), the review flow's parameter schema (~0.07 s), the prompt and report templates
compiled (~0.07 s), Prefect's API models completed on first use (~0.05 s) and the heartbeat
switched off (~0.1 s). `prepare` builds them all in the warm process, before any fork.

Prefect's settings are read again in a child only when their inputs differ from the warm
process's (`settings_inputs`): its `PREFECT_` variables, the profiles and logging files, and
the files Prefect reads from the working directory. The warm process is started with the
Prefect variables of the CLI that starts it, so the next reviews usually find them equal.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from pathlib import Path

import prefect.context
import pydantic
from prefect.context import SettingsContext, refresh_global_settings_context
from prefect.logging.configuration import setup_logging
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings

import reviewflow
from flows.review import threaded_review
from reviewflow.config.schema import ReviewSettings
from reviewflow.prompts import preload_templates

# Models whose build pydantic defers to their first use, which a review makes: Prefect's API
# models, and those the providers send and parse (all of a module, or the ones named).
_MODEL_MODULES = (
    "prefect.client.schemas",
    "prefect.events.schemas",
    "prefect.artifacts",
    "openai.types.chat",
    "anthropic.types.message",
    "anthropic.types.usage",
)
_MODEL_NAMES = frozenset(
    f"google.genai.types.{name}"  # the whole module: ~0.8 s and 24 MB more, for 17 of 468
    for name in (
        "AutomaticFunctionCallingConfig", "Candidate", "Content", "FunctionCall",
        "FunctionCallingConfig", "FunctionDeclaration", "GenerateContentConfig",
        "GenerateContentResponse", "GenerateContentResponseUsageMetadata", "HttpOptions",
        "HttpResponse", "HttpRetryOptions", "Part", "Tool", "ToolConfig", "UserContent",
        "_GenerateContentParameters",
    )
)  # fmt: skip
Inputs = tuple[object, ...]
_inputs: Inputs | None = None  # the warm process's settings inputs, as its children inherit


def prepare() -> None:
    """In the warm process, after its imports: everything a review child would build first."""
    global _inputs
    refresh_global_settings_context()
    setup_logging(incremental=False)
    _inputs = settings_inputs()
    _heartbeat_off()
    preload_templates(Path(reviewflow.__file__).parent)
    threaded_review(ReviewSettings.model_fields["concurrency"].default)
    _complete_models()


def adopt_settings() -> None:
    """In a review child, its environment adopted: Prefect's settings and logging read again,
    unless the warm process read them from the same inputs."""
    if _inputs is not None and settings_inputs() == _inputs:
        return
    refresh_global_settings_context()
    setup_logging(incremental=False)


def settings_inputs() -> Inputs | None:
    """What Prefect's settings are read from here, now; None when the working directory has a
    file Prefect takes settings from (`.env` with `PREFECT_` keys, `prefect.toml`, a
    `pyproject.toml` with `[tool.prefect]`): then they are always read again."""
    if any(_contributes(Path(name)) for name in (".env", "prefect.toml", "pyproject.toml")):
        return None
    settings = get_current_settings()
    files = (settings.profiles_path, settings.logging.config_path)
    variables = {k: v for k, v in os.environ.items() if k.upper().startswith("PREFECT_")}
    return (sorted(variables.items()), *(_stat(path) for path in files))


def _contributes(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable here: let Prefect decide
    if path.name == ".env":
        return "prefect_" in text.lower()
    if path.name == "pyproject.toml":
        try:
            return "prefect" in tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return True
    return True


def _stat(path: Path | None) -> tuple[object, ...]:
    if path is None:
        return ()
    try:
        info = os.stat(path)
    except OSError:
        return (str(path),)
    return (str(path), info.st_ino, info.st_size, info.st_mtime_ns)


def _heartbeat_off() -> None:
    """The root settings with the heartbeat off (as every CLI review runs): a child that keeps
    them skips `run_review`'s own override; one that reads its settings again does not."""
    root = prefect.context.GLOBAL_SETTINGS_CONTEXT
    off = root.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    prefect.context.GLOBAL_SETTINGS_CONTEXT = SettingsContext(profile=root.profile, settings=off)


def _complete_models() -> None:
    """Build those deferred models now (~0.4 s here), not in each review."""
    for cls in deferred_models():
        if _used(cls):
            cls.model_rebuild(raise_errors=False)


def deferred_models() -> Iterator[type[pydantic.BaseModel]]:
    """Every (non-generic) pydantic model defined so far whose build is still deferred."""
    stack: list[type[pydantic.BaseModel]] = [pydantic.BaseModel]
    seen: set[type[pydantic.BaseModel]] = set()
    while stack:
        for cls in stack.pop().__subclasses__():
            if cls in seen:
                continue
            seen.add(cls)
            stack.append(cls)
            deferred = not cls.__dict__.get("__pydantic_complete__", False)
            if deferred and not cls.__pydantic_generic_metadata__["parameters"]:
                yield cls


def _used(cls: type[pydantic.BaseModel]) -> bool:
    return (
        cls.__module__.startswith(_MODEL_MODULES)
        or f"{cls.__module__}.{cls.__qualname__}" in _MODEL_NAMES
    )
