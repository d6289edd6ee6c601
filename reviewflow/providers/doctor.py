"""`reviewflow config test`: one tiny request with the effective settings, explained plainly."""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from reviewflow.config import Config, ModelSettings, Platform, find_protocol
from reviewflow.errors import ConfigError, PermanentProviderError, ProviderError
from reviewflow.providers import failures
from reviewflow.providers.factory import MissingKeyError, PlaceholderModelError, create_provider
from reviewflow.providers.messages import ModelRequest, Usage, UserMessage
from reviewflow.providers.protocols import adapter_spec

PROBE = ModelRequest(
    system="You are a connectivity check. Answer with one word.",
    messages=(UserMessage(content="Reply with OK."),),
    max_output_tokens=16,
)


class Outcome(StrEnum):
    OK = "ok"
    PLACEHOLDER_MODEL = "placeholder_model"
    MISSING_KEY = "missing_key"
    MISSING_CREDENTIALS = "missing_credentials"
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
    platform: str = Platform.DIRECT.value
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
        where = "" if self.platform == Platform.DIRECT.value else f" on {self.platform}"
        head = f"model {self.protocol}/{self.model}{where} at {self.endpoint}"
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
            protocol=settings.protocol,
            platform=settings.platform,
            model=settings.name,
            endpoint=settings.effective_endpoint,
            message=message,
            hint=_hint(outcome, settings, message),
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
        (failures.MissingCredentialsError, Outcome.MISSING_CREDENTIALS),
        (PermanentProviderError, Outcome.REJECTED),
    ]
    for kind, outcome in kinds:
        if isinstance(exc, kind):
            return outcome
    return Outcome.TRANSIENT


def _hint(outcome: Outcome, settings: ModelSettings, message: str) -> str | None:
    """The hint for `outcome`, in the platform's own terms where it has them, else in the
    protocol's (its spec's hints), else the general one."""
    if settings.platform == Platform.BEDROCK:
        hint = _bedrock_hint(outcome, settings, message)
    elif settings.platform == Platform.VERTEX:
        hint = _vertex_hint(outcome, settings, message)
    elif settings.platform == Platform.AZURE:
        hint = _azure_hint(outcome, settings)
    else:
        known = find_protocol(settings.protocol) is not None
        hint = adapter_spec(settings.protocol).hints.get(outcome.value) if known else None
    return hint or _HINTS.get(outcome)


def _bedrock_hint(outcome: Outcome, settings: ModelSettings, message: str) -> str | None:
    region, text = settings.region, message.lower()
    if outcome is Outcome.KEY_REJECTED and "access to the model" in text:
        return (
            f"model access not granted: enable {settings.name} under Model access in the "
            f"Bedrock console for region {region}"
        )
    if outcome is Outcome.KEY_REJECTED and settings.api_key is not None:
        return (
            "check the Bedrock API key (AWS_BEARER_TOKEN_BEDROCK or model.api_key) and that it "
            f"was made for region {region}"
        )
    if outcome is Outcome.KEY_REJECTED:
        return (
            "check the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID, the role) and that "
            f"they may call bedrock:InvokeModel in {region}"
        )
    if outcome is Outcome.UNKNOWN_MODEL or "model identifier is invalid" in text:
        return (
            f"check model.name (a Bedrock model or inference profile ID such as "
            f"anthropic.claude-sonnet-4-5-20250929-v1:0) and model.region ({region})"
        )
    if outcome in (Outcome.UNREACHABLE, Outcome.TIMEOUT):
        return f"check model.region ({region}) and that {settings.effective_endpoint} is reachable"
    return None


def _vertex_hint(outcome: Outcome, settings: ModelSettings, message: str) -> str | None:
    project = settings.project or "of your credentials"
    if outcome is Outcome.KEY_REJECTED and "HTTP 403" in message:
        return (
            f"the credentials lack Vertex AI access in project {project}: grant "
            "roles/aiplatform.user, enable the Vertex AI API and, for Claude, the model in "
            "Model Garden"
        )
    if outcome is Outcome.KEY_REJECTED:
        return "check Google credentials: run `gcloud auth application-default login`"
    if outcome is Outcome.UNKNOWN_MODEL:
        return (
            f"check model.name and model.region ({settings.region}): the model may not be "
            f"offered there, or not enabled in Model Garden for project {project}"
        )
    if outcome in (Outcome.UNREACHABLE, Outcome.TIMEOUT):
        endpoint = settings.effective_endpoint
        return f"check model.region ({settings.region}) and that {endpoint} is reachable"
    return None


def _azure_hint(outcome: Outcome, settings: ModelSettings) -> str | None:
    if outcome is Outcome.UNKNOWN_MODEL:
        return (
            f"deployment '{settings.effective_deployment}' not found at {settings.endpoint}: "
            "model.deployment (default: model.name) must name a deployment of that resource"
        )
    if outcome is Outcome.KEY_REJECTED and settings.api_key is not None:
        return f"check AZURE_OPENAI_API_KEY belongs to the resource at {settings.endpoint}"
    if outcome is Outcome.KEY_REJECTED:
        return (
            "check the Entra ID identity (AZURE_OPENAI_AD_TOKEN, else `az login`, the managed "
            "identity or AZURE_CLIENT_ID) has the Cognitive Services OpenAI User role on the "
            f"resource at {settings.endpoint}"
        )
    if outcome is Outcome.REJECTED:
        return (
            f"check model.api_version ({settings.effective_api_version}) and model.deployment "
            "against the resource"
        )
    if outcome is Outcome.UNREACHABLE:
        return "check model.endpoint (https://RESOURCE.openai.azure.com)"
    return None
