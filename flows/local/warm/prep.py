"""What the first review in a process builds, built before it: by the warm review process once
for every review it forks, and by the CLI while a cold server boots.

A process's first review pays, besides its flow run, for imports that Prefect and the SDKs make
lazily (~160 modules), the prompt and report templates compiled, the review flow's parameter
schema, and the API and SDK models whose build pydantic defers to their first use
(`prepare_run`). A warm process's child would also read Prefect's settings and logging config
again for its environment (~0.3 s) and switch the heartbeat off with a settings copy (~0.1 s):
`prepare` does those once in the warm process, before any fork.

Prefect's settings are read again in a child only when their inputs differ from the warm
process's (`settings_inputs`): its `PREFECT_` variables, the profiles and logging files, and
the files Prefect reads from the working directory. The warm process is started with the
Prefect variables of the CLI that starts it, so the next reviews usually find them equal.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

import prefect.context
import pydantic
from prefect.context import SettingsContext, refresh_global_settings_context
from prefect.logging.configuration import setup_logging
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings

import reviewflow
from flows.review_flow import threaded_review
from reviewflow.ci import ci_variable_names
from reviewflow.config.schema import ReviewSettings
from reviewflow.prompts import preload_templates
from reviewflow.providers.protocols import BUILTIN, adapter_spec

# What the first flow run in a process imports lazily (~160 modules); a review on a protocol also
# imports its spec's `warm` modules (its provider and the parts of its SDK that the SDK imports on
# first use: reviewflow.providers.protocols). Only an optimisation: a module that a new version no
# longer has is skipped.
LAZY = (
    "prefect.flow_engine",
    "prefect.task_engine",
    "prefect.utilities.visualization",
    "fastapi.encoders",
    "anyio._backends._asyncio",
    "httpcore2",
    "opentelemetry.metrics",
    "opentelemetry._logs",
    "truststore",
    "rich._emoji_codes",
)
# The models whose build pydantic defers to their first use, which a review makes (one review
# per protocol, listed): Prefect's API models, and those the providers send and parse.
DEFERRED_MODELS = {
    "prefect.artifacts": ("MarkdownArtifact", "TableArtifact"),
    "prefect.client.schemas.actions": (
        "ArtifactCreate", "FlowCreate", "FlowRunCreate", "LogCreate",
    ),
    "prefect.client.schemas.objects": (
        "Artifact", "ConcurrencyLeaseHolder", "FlowRun", "FlowRunPolicy",
        "ServerDefaultResultStorage",
    ),
    "prefect.events.schemas.events": ("Event",),
    "openai.types.chat.chat_completion": ("ChatCompletion", "Choice"),
    "openai.types.chat.chat_completion_message": ("ChatCompletionMessage",),
    "anthropic.types.message": ("Message",),
    "anthropic.types.usage": ("Usage",),
    "google.genai.types": (
        "AutomaticFunctionCallingConfig", "Candidate", "Content", "FunctionCall",
        "FunctionCallingConfig", "FunctionDeclaration", "GenerateContentConfig",
        "GenerateContentResponse", "GenerateContentResponseUsageMetadata", "HttpOptions",
        "HttpResponse", "HttpRetryOptions", "Part", "Tool", "ToolConfig", "UserContent",
        "_GenerateContentParameters",
    ),
}  # fmt: skip
Inputs = tuple[object, ...]


def prepare() -> Inputs | None:
    """In the warm process, after its imports: everything a review child would build first.
    Returns what its Prefect settings were read from (`settings_inputs`), for `adopt_settings`."""
    refresh_global_settings_context()
    setup_logging(incremental=False)
    inputs = settings_inputs()
    root_heartbeat_off()
    prepare_run(ReviewSettings.model_fields["concurrency"].default, tuple(BUILTIN))
    ci_variable_names()  # the platform registry read (installed plugins' too): children reuse it
    return inputs


def prepare_run(concurrency: int | None, protocols: Iterable[str]) -> None:
    """What a process's first review builds: imports (Prefect's, and those of the `protocols`
    its model uses), templates, the review flow on `concurrency` threads (unless None) and the
    deferred models. Run once the review's Prefect environment is in `os.environ`."""
    warm = itertools.chain.from_iterable(adapter_spec(p).warm for p in protocols)
    for name in (*LAZY, *warm):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    preload_templates(Path(reviewflow.__file__).parent)
    if concurrency is not None:
        threaded_review(concurrency)
    for cls in deferred_models():
        if not cls.__pydantic_complete__:
            cls.model_rebuild(raise_errors=False)


def deferred_models() -> list[type[pydantic.BaseModel]]:
    """The classes `DEFERRED_MODELS` names, among the modules imported so far."""
    found = []
    for module, names in DEFERRED_MODELS.items():
        for name in names:
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type) and issubclass(cls, pydantic.BaseModel):
                found.append(cls)
    return found


def adopt_settings(inputs: Inputs | None) -> None:
    """In a review child, its environment adopted: Prefect's settings and logging read again,
    unless the warm process read them from the same `inputs` (`prepare`'s)."""
    if inputs is not None and settings_inputs() == inputs:
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
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return True
        return not isinstance(tool, dict) or "prefect" in tool
    return True


def _stat(path: Path | None) -> tuple[object, ...]:
    if path is None:
        return ()
    try:
        info = os.stat(path)
    except OSError:
        return (str(path),)
    return (str(path), info.st_ino, info.st_size, info.st_mtime_ns)


def root_heartbeat_off() -> None:
    """The root settings with the heartbeat off (as every CLI review runs): a child that keeps
    them, or a CLI that prepared them beside a cold server's boot, skips `run_review`'s own
    override (~0.06 s); one that reads its settings again does not."""
    root = prefect.context.GLOBAL_SETTINGS_CONTEXT
    if root.settings.flows.heartbeat_frequency is None:  # a warm child's, prepared before the fork
        return
    off = root.settings.copy_with_update(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    prefect.context.GLOBAL_SETTINGS_CONTEXT = SettingsContext(profile=root.profile, settings=off)
