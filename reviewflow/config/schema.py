"""The typed configuration: its sections, keys, defaults and value checks."""

from __future__ import annotations

import ipaddress
import math
import re
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from reviewflow.config.language import is_known_tag
from reviewflow.config.platforms import (
    AZURE_API_VERSION,
    Platform,
    builtin_key_variables,
    check_platform_protocol,
    platform_endpoint,
    with_implied_protocol,
)
from reviewflow.config.protocols import BUILTIN, find_protocol, protocol_spec
from reviewflow.models import Severity
from reviewflow.platforms import builtin, find_platform

PLACEHOLDER_MODEL = "configured-model"
ENV_PREFIX = "REVIEWFLOW_MODEL_"
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", "*"})
# The API key variables of the built-in protocols and the platforms (a plugin's are in its spec).
KEY_ENV_VARS = (
    ENV_PREFIX + "API_KEY",
    *(name for spec in BUILTIN.values() for name in spec.key_env),
    *builtin_key_variables(),
)

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


class TaskRunner(StrEnum):
    THREAD = "thread"
    DASK = "dask"


class ConsoleMode(StrEnum):
    DETAILED = "detailed"
    SUMMARY = "summary"
    OFF = "off"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def parse_token_count(value: object) -> object:
    """A token count from an integer or a text such as `200000`, `200k` or `1.5M`."""
    if isinstance(value, str):
        text = value.strip().lower().replace("_", "").replace(",", "")
        scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
        number = text[:-1] if scale > 1 else text
        try:
            return int(float(number) * scale) if number else value
        except ValueError:
            message = f"invalid token count {value!r} (use e.g. 200000, 200k or 1.5M)"
            raise ValueError(message) from None
    return value


TokenCount = Annotated[int, BeforeValidator(parse_token_count)]


def parse_currency(value: object) -> object:
    """A currency as its 3-letter ISO 4217 code (`usd` is `USD`)."""
    if not isinstance(value, str) or re.fullmatch(r"[A-Za-z]{3}", value.strip()) is None:
        message = f"invalid currency {value!r} (use a 3-letter ISO code, e.g. USD or EUR)"
        raise ValueError(message)
    return value.strip().upper()


class ModelPrice(_Section):
    """What the model costs, per million tokens, in `currency` (USD, as the bundled table)."""

    input: float = Field(ge=0, le=10_000, description="price per million input tokens")
    cached_input: float | None = Field(
        None, ge=0, le=10_000, description="price per million cached input tokens"
    )
    output: float = Field(ge=0, le=10_000, description="price per million output tokens")
    currency: Annotated[str, BeforeValidator(parse_currency)] = Field(
        "USD", description="the ISO 4217 code of the prices' currency, e.g. USD or EUR"
    )

    def cost(self, prompt: float, completion: float, cached: float = 0.0) -> float:
        """The price of `prompt` input tokens (`cached` of them read from the provider's
        prompt cache) and `completion` output tokens."""
        cached_rate = self.input if self.cached_input is None else self.cached_input
        uncached = max(0.0, prompt - cached)
        return (uncached * self.input + cached * cached_rate + completion * self.output) / 1e6


class BelowAgreement(StrEnum):
    """What becomes of a finding fewer than `review.min_agreement` passes found."""

    DROP = "drop"  # dropped as `no_agreement`
    VERIFY = "verify"  # with `review.verify`, kept for the verification to decide


class ReviewSettings(_Section):
    concurrency: int = Field(4, ge=1, le=64)
    context_lines: int = Field(3, ge=0, le=1000)
    max_tool_rounds: int = Field(30, ge=1, le=500)
    max_context_tool_calls: int = Field(10, ge=0, le=200)
    max_chunk_tokens: int = Field(12000, ge=1000, le=2_000_000)
    confidence_threshold: float = Field(0.75, ge=0.0, le=1.0)
    max_file_bytes: int = Field(1 << 20, ge=1024, le=64 << 20)
    fail_on: list[Severity] = Field(default_factory=lambda: [Severity.CRITICAL, Severity.HIGH])
    task_runner: TaskRunner = TaskRunner.THREAD
    dask_address: str | None = Field(
        None,
        pattern=r"^(tcp|tls|ucx|inproc)://\S+$",
        description="a scheduler address such as tcp://HOST:8786",
    )
    shared_store: str | None = Field(
        None,
        pattern=r"^/",
        description="an absolute path of a directory this machine and a Dask cluster's workers "
        "both reach, e.g. a shared mount: the snapshot the tools read goes there as a Git "
        "bundle, and the model stages' results are stored there",
    )
    instructions: str | None = Field(
        None, description="a Markdown file of review instructions, e.g. docs/review.md"
    )  # relative: to the repository root (`--instructions` is made absolute by the CLI)
    sast: bool = False
    # The context pack (docs/context.md): the code the change touches, in the main request.
    context: bool = Field(True, description="on or off (or true or false)")
    context_tokens: int = Field(
        1500,
        ge=0,
        le=100_000,
        description="a token count from 0 to 100000, e.g. 1500",
    )
    sast_rules: str | None = Field(
        None, min_length=1, description="a directory of semgrep rule files (.yaml, .yml)"
    )
    sast_semgrep: str | None = Field(
        None,
        min_length=1,
        description="the semgrep executable (default: beside Python, its venv's -sast sibling, "
        "or PATH)",
    )
    sast_timeout: Duration = Field(
        300.0, description="a positive duration such as 300s or 5m: the longest one semgrep run"
    )
    verify: bool = False  # Chain-of-Verification of every finding (`--verify`)
    verify_model: str | None = Field(
        None, min_length=1, description="a model name of the same protocol, e.g. gpt-4o-mini"
    )
    verify_price: ModelPrice | None = None  # the verify model's; else the bundled table's
    verify_budget: int = Field(4, ge=0, le=50)  # context tool calls per finding
    # Agreement across independent passes (docs/cost.md#agreement): each pass reviews every
    # file on its own; a finding stays when `min_agreement` passes found it.
    passes: int = Field(1, ge=1, le=5, description="a number of passes from 1 to 5")
    pass_models: list[PassModel] = Field(
        default_factory=list,
        description="a list of model settings (protocol, name, endpoint, platform, price...), one "
        "per pass from the first, each priced at its price (else the bundled table's); a pass "
        "without one uses model.*",
    )
    min_agreement: int | None = Field(
        None,
        ge=1,
        le=5,
        description="a number of passes from 1 to review.passes (unset: a majority)",
    )
    below_agreement: BelowAgreement = Field(
        BelowAgreement.DROP,
        description="drop, or verify (with review.verify: the verification decides instead)",
    )
    # A `reviewflow: ignore` comment the change itself adds silences findings; unset: yes
    # locally, no in CI (`honours_new_suppressions`).
    honour_new_suppressions: bool | None = Field(
        None, description="true or false (unset: true locally, false in CI)"
    )
    # The review's budget (`--max-tokens`, `--max-cost`): no request is sent that would cross it.
    max_tokens: TokenCount | None = Field(
        None,
        ge=1000,
        le=10_000_000_000,
        description="a token count of at least 1000, such as 200000 or 200k",
    )
    max_cost: float | None = Field(
        None, gt=0, le=1_000_000, description="an amount above 0 in the price's currency, e.g. 2.50"
    )

    @field_validator("fail_on", mode="before")
    @classmethod
    def _split_fail_on(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("context", mode="before")
    @classmethod
    def _on_off(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in ("on", "off"):
            return value.strip().lower() == "on"
        return value

    @field_validator("instructions")
    @classmethod
    def _no_blank_instructions(cls, value: str | None) -> str | None:
        return value if value and value.strip() else None

    @field_validator("min_agreement", "pass_models")
    @classmethod
    def _within_passes(cls, value: Any, info: ValidationInfo) -> Any:
        """At most `passes` of them: a `conflict` naming both keys where they were set."""
        passes = info.data.get("passes")
        if value is None or passes is None:
            return value
        count = value if isinstance(value, int) else len(value)
        if count <= passes:
            return value
        reason = (
            "no finding is found by more passes than the review makes"
            if isinstance(value, int)
            else f"{count} models for {passes} passes (one model per pass at most)"
        )
        raise PydanticCustomError(
            "conflict",
            "{reason}",
            {"reason": reason, "other": "review.passes", "value": passes},
        )

    @property
    def agreement(self) -> int:
        """The passes a finding needs: `min_agreement`, else a majority of the passes."""
        return self.min_agreement if self.min_agreement is not None else self.passes // 2 + 1

    def honours_new_suppressions(self, ci: bool) -> bool:
        """Whether a suppression comment the change adds silences: as set, else not in CI."""
        if self.honour_new_suppressions is None:
            return not ci
        return self.honour_new_suppressions

    def cache_identity(self) -> dict[str, int]:
        """The settings a model stage's answer depends on: concurrency, thresholds, the gate
        and where stages run apply after the model, so changing them reuses cached answers."""
        return {
            "context_lines": self.context_lines,
            "max_tool_rounds": self.max_tool_rounds,
            "max_context_tool_calls": self.max_context_tool_calls,
            "max_chunk_tokens": self.max_chunk_tokens,
        }


class ModelSettings(_Section):
    protocol: str = Field(
        "openai",
        description="openai, anthropic, gemini, or a protocol an installed plugin registers in "
        "the entry point group reviewflow.protocols",
    )
    name: str = Field(PLACEHOLDER_MODEL, min_length=1, description="a model name, e.g. gpt-4o")
    endpoint: str | None = None
    api_key: SecretStr | None = None
    timeout: Duration = Field(
        120.0, description="a positive duration such as 120s, 2m, 1m30s or 500ms, at most one day"
    )
    api_key_block: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="the name of a Prefect Secret block, e.g. reviewflow-openai-key",
    )
    platform: str = Field(
        Platform.DIRECT.value,
        description="direct (any protocol), bedrock (protocol anthropic), vertex (protocol gemini "
        "or anthropic), azure (protocol openai), or a platform an installed plugin registers in "
        "the entry point group reviewflow.model_platforms; a plugin protocol runs on a platform "
        "that carries its transport",
    )
    region: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$",
        description="a cloud region: an AWS region such as us-east-1 (bedrock), a Vertex AI "
        "location such as us-east5 or global (vertex)",
    )
    project: str | None = Field(
        None,
        pattern=r"^(?:[a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$",
        description="a Google Cloud project ID such as my-project-123 (vertex)",
    )
    deployment: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="an Azure OpenAI deployment name such as gpt-4o-prod (azure)",
    )
    api_version: str | None = Field(
        None,
        pattern=r"^\d{4}-\d{2}-\d{2}(-preview)?$",
        description="an Azure OpenAI api-version such as 2024-10-21 (azure)",
    )

    @model_validator(mode="before")
    @classmethod
    def _implied_protocol(cls, data: object) -> object:
        """A platform's protocol when model.protocol is not set (bedrock: anthropic...)."""
        return with_implied_protocol(data)

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        if find_protocol(value) is None:
            raise ValueError(f"unknown protocol {value!r}")
        return value

    @field_validator("platform")
    @classmethod
    def _platform_speaks_protocol(cls, value: str, info: ValidationInfo) -> str:
        protocol = info.data.get("protocol")
        spec = find_protocol(protocol) if isinstance(protocol, str) else None
        return check_platform_protocol(value, protocol, spec.wire if spec else None)

    price: ModelPrice | None = None  # per million tokens; else the bundled table (cost/prices)

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
        if self.endpoint:
            return self.endpoint
        if self.platform != Platform.DIRECT:
            return platform_endpoint(self.platform, self.region)
        return protocol_spec(self.protocol).default_endpoint

    @property
    def effective_deployment(self) -> str:
        """The Azure OpenAI deployment: model.deployment, else the model name."""
        return self.deployment or self.name

    @property
    def effective_api_version(self) -> str:
        """The Azure OpenAI api-version: model.api_version, else the tested default."""
        return self.api_version or AZURE_API_VERSION


def report_off(value: object) -> bool:
    """`off` (or YAML's `false`) turns a report off, like null or "", and like `console: off`.
    A file named off is `./off`."""
    return value is False or value == "off"


class OutputSettings(_Section):
    json_path: str | None = Field("review-report.json", alias="json")
    markdown: str | None = "review-report.md"
    sarif: str | None = "review-report.sarif"
    gitlab: str | None = None  # GitLab Code Quality JSON; off unless set
    console: ConsoleMode = ConsoleMode.DETAILED
    language: str = Field(
        "en-US",
        description="a BCP 47 tag of a known language, such as en, en-US, de-DE, pt-BR or zh-Hant",
    )
    progress: bool = True
    report_dir: str | None = None

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        if not is_known_tag(value):
            raise ValueError("not a known language tag")
        return value

    @field_validator("json_path", "markdown", "sarif", "gitlab", mode="before")
    @classmethod
    def _off(cls, value: object) -> object:
        return None if report_off(value) else value

    @property
    def reports(self) -> dict[str, str | None]:
        """Each report file's setting, by kind (None or "": off)."""
        return {
            "json": self.json_path,
            "markdown": self.markdown,
            "sarif": self.sarif,
            "gitlab": self.gitlab,
        }

    @property
    def to_stdout(self) -> list[str]:
        """The kinds of the reports that go to stdout (`-`): the console report then goes to
        stderr, so stdout holds the report alone (`--json - | jq`)."""
        return [kind for kind, setting in self.reports.items() if setting == "-"]


class PrefectSettings(_Section):
    """The local Prefect server a CLI review reuses (when PREFECT_API_URL is not set)."""

    server_reuse: bool = True
    server_idle_minutes: float = Field(
        60.0, gt=0, le=24 * 60, description="minutes, more than 0 and at most 1440 (one day)"
    )
    warm_process: bool = True  # hand local reviews to a pre-imported process (`--no-warm`: off)
    server_host: str | None = Field(
        None,
        description="an IP address or host name of this machine, not a wildcard such as 0.0.0.0",
    )

    @field_validator("server_host")
    @classmethod
    def _one_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value in WILDCARD_HOSTS:
            raise ValueError(
                "name the address the workers reach (a wildcard is no address to report to)"
            )
        if not _valid_host(value):
            raise ValueError("must be an IP address or a host name")
        return value


class PublishSettings(_Section):
    """Where findings are published (`--publish`): the request, and which token to use.

    `target` is off, auto (the platform whose CI this is) or a platform of the registry
    (`reviewflow.platforms`: built in, or an installed plugin's). Tokens never live here: they
    come from the environment (each platform's spec names its variables) or, for deployments,
    from the Prefect Secret block `token_block` names.
    """

    target: str = Field(
        "off",
        description="off, auto (the platform of this CI, if any), or a platform: "
        + ", ".join(builtin())
        + ", or one an installed plugin registers in the entry point group reviewflow.platforms",
    )
    repo: str | None = Field(
        None,
        pattern=r"^~?[\w.-]+( [\w.-]+)*(/[\w.-]+( [\w.-]+)*)+$|^[0-9]+$",
        description="OWNER/NAME (a GitLab project's path or ID, Azure DevOps' PROJECT/REPOSITORY)",
    )
    pull_request: int | None = Field(None, ge=1, description="a pull/merge request number")
    api_url: str | None = Field(None, description="the platform API's base URL (http or https)")
    token_block: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="the name of a Prefect Secret block, e.g. reviewflow-github-token",
    )

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        if value not in ("off", "auto") and find_platform(value) is None:
            raise ValueError(f"unknown platform {value!r}")
        return value

    @field_validator("api_url")
    @classmethod
    def _check_api_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        return check_endpoint(str(value)).rstrip("/")


class PassModel(ModelSettings):
    """One pass's model (`review.pass_models`): model settings whose key is never in the
    configuration (it comes from the protocol's key variables, as `model.api_key` does), since
    the review settings are a task parameter."""

    @field_validator("api_key")
    @classmethod
    def _no_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            message = "review.pass_models take no api_key: set the protocol's key variable"
            raise ValueError(message)
        return value


ReviewSettings.model_rebuild()


class Config(_Section):
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    output: OutputSettings = Field(default_factory=OutputSettings)
    prefect: PrefectSettings = Field(default_factory=PrefectSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)
