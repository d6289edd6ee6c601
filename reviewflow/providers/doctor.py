"""`reviewflow config test`: one tiny request with the effective settings, explained plainly."""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from reviewflow.config import Config
from reviewflow.errors import ConfigError, PermanentProviderError, ProviderError
from reviewflow.providers import failures
from reviewflow.providers.factory import MissingKeyError, PlaceholderModelError, create_provider
from reviewflow.providers.messages import ModelRequest, Usage, UserMessage

PROBE = ModelRequest(
    system="You are a connectivity check. Answer with one word.",
    messages=(UserMessage(content="Reply with OK."),),
    max_output_tokens=16,
)


class Outcome(StrEnum):
    OK = "ok"
    PLACEHOLDER_MODEL = "placeholder_model"
    MISSING_KEY = "missing_key"
    CONFIG = "config"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    KEY_REJECTED = "key_rejected"
    UNKNOWN_MODEL = "unknown_model"
    TRANSIENT = "transient"
    REJECTED = "rejected"


_HINTS = {
    Outcome.UNREACHABLE: "check model.endpoint and that the server is running",
    Outcome.TIMEOUT: "the endpoint is slow or unreachable; check model.endpoint or raise "
    "model.timeout",
    Outcome.KEY_REJECTED: "check the API key (REVIEWFLOW_MODEL_API_KEY or model.api_key)",
    Outcome.UNKNOWN_MODEL: "check model.name (and model.endpoint) against the provider's "
    "model list",
    Outcome.TRANSIENT: "the provider is busy or failing; try again later",
    Outcome.REJECTED: "the endpoint rejected the request; check model.protocol and model.endpoint",
}


class DoctorReport(BaseModel):
    """What `config test` found: the outcome, a one-line summary and a hint."""

    model_config = ConfigDict(frozen=True)

    outcome: Outcome
    protocol: str
    model: str
    endpoint: str
    message: str
    hint: str | None = None
    seconds: float | None = None
    usage: Usage | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 2

    def render(self) -> str:
        """The lines the CLI prints (never the API key)."""
        head = f"model {self.protocol}/{self.model} at {self.endpoint}"
        lines = [f"{head}: {'OK' if self.ok else 'FAILED'}", f"  {self.message}"]
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


def check_model(config: Config) -> DoctorReport:
    """Send one tiny request with the effective model settings and report what happened."""
    settings = config.model

    def report(
        outcome: Outcome, message: str, seconds: float | None = None, usage: Usage | None = None
    ) -> DoctorReport:
        return DoctorReport(
            outcome=outcome,
            protocol=settings.protocol.value,
            model=settings.name,
            endpoint=settings.effective_endpoint,
            message=message,
            hint=_HINTS.get(outcome),
            seconds=seconds,
            usage=usage,
        )

    started = time.monotonic()
    try:
        provider = create_provider(settings)
        try:
            response = provider.complete(PROBE)
        finally:
            provider.close()
    except PlaceholderModelError as exc:
        return report(Outcome.PLACEHOLDER_MODEL, str(exc))
    except MissingKeyError as exc:
        return report(Outcome.MISSING_KEY, str(exc))
    except ConfigError as exc:
        return report(Outcome.CONFIG, str(exc))
    except ProviderError as exc:
        return report(_outcome(exc), str(exc))
    seconds = round(time.monotonic() - started, 3)
    usage = response.usage
    message = (
        f"answered in {seconds:.2f}s ({usage.prompt_tokens} prompt + "
        f"{usage.completion_tokens} completion tokens)"
    )
    return report(Outcome.OK, message, seconds=seconds, usage=usage)


def _outcome(exc: ProviderError) -> Outcome:
    kinds: list[tuple[type[ProviderError], Outcome]] = [
        (failures.ProviderTimeoutError, Outcome.TIMEOUT),
        (failures.EndpointUnreachableError, Outcome.UNREACHABLE),
        (failures.ProviderAuthError, Outcome.KEY_REJECTED),
        (failures.ModelNotFoundError, Outcome.UNKNOWN_MODEL),
        (failures.UnsendableRequestError, Outcome.CONFIG),
        (PermanentProviderError, Outcome.REJECTED),
    ]
    for kind, outcome in kinds:
        if isinstance(exc, kind):
            return outcome
    return Outcome.TRANSIENT
