"""Cloud model platforms on the wire: the real SDK clients (AnthropicBedrock, AnthropicVertex,
google-genai on Vertex AI, AzureOpenAI) against the local wire server, their credentials from
each platform's own chain, their faults typed and explained by `config test`."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from anthropic._constants import ANTHROPIC_API_VERSION
from pydantic import SecretStr

from reviewflow.config import Config, ModelSettings
from reviewflow.errors import TransientProviderError
from reviewflow.providers import ModelRequest, ProviderPool, UserMessage, create_provider
from reviewflow.providers.doctor import PROBE, Outcome, check_model
from reviewflow.providers.failures import (
    MissingCredentialsError,
    ModelNotFoundError,
    ProviderAuthError,
    RetryableStatusError,
)
from reviewflow.providers.pool import ProviderHandle
from tests.platforms import (
    AWS_SECRET_KEY,
    AWS_SESSION_TOKEN,
    AZURE_CLI_TOKEN,
    GOOGLE_PROJECT,
    aws_credentials,
    azure_cli,
    google_adc,
    no_aws_credentials,
    verify_sigv4,
)
from tests.wire_server import GOOGLE_TOKEN, HttpError, Raw, Text, WireServer, WireUsage

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AZURE_KEY = "azk-wire-test-7f3a9c2e41b8d6"
ACCESS_DENIED = {"message": "You don't have access to the model with the specified model ID."}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    aws_credentials(monkeypatch, tmp_path)


@pytest.fixture
def adc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, wire: WireServer) -> Path:
    return google_adc(monkeypatch, tmp_path, wire)


def _bedrock(wire: WireServer, **fields: object) -> ModelSettings:
    return wire.platform_settings(
        "bedrock", "anthropic", name=BEDROCK_MODEL, region="eu-central-1", **fields
    )


def _secrets_absent(text: str) -> None:
    for secret in (AWS_SECRET_KEY, AWS_SESSION_TOKEN, GOOGLE_TOKEN, AZURE_KEY):
        assert secret not in text


# --- Amazon Bedrock ---------------------------------------------------------------------


def test_bedrock_invokes_the_model_path_signed_with_sigv4(wire: WireServer, aws: None) -> None:
    wire.script("anthropic", [Text("OK", usage=WireUsage(prompt=5, cache_read=40, cache_write=8))])
    provider = create_provider(_bedrock(wire))
    try:
        response = provider.complete(PROBE)
    finally:
        provider.close()
    (record,) = wire.requests("anthropic")
    assert record.platform == "bedrock"
    assert record.path == f"/model/{BEDROCK_MODEL}/invoke"
    assert record.model == BEDROCK_MODEL
    assert record.body["anthropic_version"] == ANTHROPIC_API_VERSION and "model" not in record.body
    assert record.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    verify_sigv4(record, "eu-central-1")
    assert record.headers["x-amz-security-token"] == AWS_SESSION_TOKEN
    assert AWS_SECRET_KEY not in json.dumps(record.headers)
    assert response.text == "OK"
    usage = response.usage  # Anthropic's input_tokens leave the cached part out: added back
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (53, 40, 8)


def test_bedrock_usage_headers_fill_counts_the_body_leaves_out(wire: WireServer, aws: None) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": BEDROCK_MODEL,
        "content": [{"type": "text", "text": "OK"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    headers = {
        "x-amzn-bedrock-input-token-count": "10",
        "x-amzn-bedrock-output-token-count": "2",
        "x-amzn-bedrock-cache-read-input-token-count": "300",
        "x-amzn-bedrock-cache-write-input-token-count": "25",
    }
    wire.script("anthropic", [Raw(200, body, headers=headers)])
    with ProviderPool(_bedrock(wire), 1) as pool:
        usage = pool.complete(PROBE).usage
        totals = pool.meter.totals()
    assert (usage.prompt_tokens, usage.completion_tokens) == (335, 2)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (300, 25)
    assert totals.cache_read_tokens == 300 and totals.requests == 1


def test_bedrock_api_key_is_a_bearer_token_never_shown(
    wire: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_aws_credentials(monkeypatch, tmp_path)  # a Bedrock API key needs no AWS credentials
    wire.script("anthropic", [HttpError(403), Text("OK")])
    settings = _bedrock(wire, key=AZURE_KEY)
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.KEY_REJECTED and "[REDACTED]" in report.message
    assert "AWS_BEARER_TOKEN_BEDROCK" in str(report.hint)
    _secrets_absent(report.render())
    assert check_model(Config(model=settings)).ok
    assert [r.headers["authorization"] for r in wire.requests()] == [f"Bearer {AZURE_KEY}"] * 2


def test_bedrock_model_access_not_granted_is_explained(wire: WireServer, aws: None) -> None:
    denied = HttpError(403, ACCESS_DENIED, {"x-amzn-errortype": "AccessDeniedException"})
    wire.script("anthropic", [denied])
    report = check_model(Config(model=_bedrock(wire)))
    assert report.outcome is Outcome.KEY_REJECTED and report.platform == "bedrock"
    assert report.hint is not None and "model access not granted" in report.hint
    assert BEDROCK_MODEL in report.hint and "eu-central-1" in report.hint
    assert (
        report.render()
        .splitlines()[0]
        .startswith(f"model anthropic/{BEDROCK_MODEL} on bedrock at {wire.url}: FAILED")
    )
    assert len(wire.requests()) == 1


def test_bedrock_signature_refused_points_at_the_aws_credentials(
    wire: WireServer, aws: None
) -> None:
    wire.script("anthropic", [HttpError(403, {"message": "The security token is invalid."})])
    report = check_model(Config(model=_bedrock(wire)))
    assert report.outcome is Outcome.KEY_REJECTED
    assert report.hint is not None and "AWS credentials" in report.hint
    assert "bedrock:InvokeModel" in report.hint


def test_bedrock_without_aws_credentials_sends_nothing(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_aws_credentials(monkeypatch, tmp_path)
    provider = create_provider(_bedrock(wire))
    with pytest.raises(MissingCredentialsError) as caught:
        provider.complete(PROBE)
    provider.close()
    assert "no AWS credentials found" in str(caught.value)
    assert "AWS_PROFILE" in str(caught.value) and "AWS_BEARER_TOKEN_BEDROCK" in str(caught.value)
    report = check_model(Config(model=_bedrock(wire)))
    assert report.outcome is Outcome.MISSING_CREDENTIALS and report.exit_code == 2
    assert wire.requests() == []


def test_bedrock_unknown_profile_is_named(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    report = check_model(Config(model=_bedrock(wire)))
    assert report.outcome is Outcome.MISSING_CREDENTIALS
    assert "no-such-profile" in report.message and "AWS_PROFILE" in report.message
    assert wire.requests() == []


def test_bedrock_needs_a_region(wire: WireServer) -> None:
    settings = wire.platform_settings("bedrock", "anthropic", name=BEDROCK_MODEL)
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.CONFIG
    assert "model.region" in report.message and "AWS_REGION" in report.message
    assert wire.requests() == []


# --- Vertex AI --------------------------------------------------------------------------


def test_vertex_gemini_path_and_google_token(wire: WireServer, adc: Path) -> None:
    wire.script("gemini", [Text("one", usage=WireUsage(prompt=30, cache_read=20)), Text("two")])
    settings = wire.platform_settings(
        "vertex", "gemini", name="gemini-2.5-pro", region="us-central1"
    )
    with ProviderPool(settings, 2) as pool:
        first = pool.complete(PROBE)
        pool.complete(PROBE)
    records = wire.requests("gemini")
    assert [r.path for r in records] == [
        f"/v1/projects/{GOOGLE_PROJECT}/locations/us-central1/publishers/google/models/"
        "gemini-2.5-pro:generateContent"
    ] * 2
    assert {r.platform for r in records} == {"vertex"}
    assert {r.headers["authorization"] for r in records} == {f"Bearer {GOOGLE_TOKEN}"}
    assert "x-goog-api-key" not in records[0].headers
    assert len(wire.requests("token")) == 1  # the credentials are shared, the token reused
    assert (first.usage.prompt_tokens, first.usage.cache_read_tokens) == (30, 20)


def test_vertex_claude_raw_predict_in_the_configured_project(wire: WireServer, adc: Path) -> None:
    wire.script("anthropic", [Text("OK", usage=WireUsage(prompt=3, cache_read=12))])
    settings = wire.platform_settings(
        "vertex",
        "anthropic",
        name="claude-sonnet-4-5@20250929",
        region="us-east5",
        project="team-reviews-1",
    )
    provider = create_provider(settings)
    try:
        usage = provider.complete(PROBE).usage
    finally:
        provider.close()
    (record,) = wire.requests("anthropic")
    assert record.path == (
        "/v1/projects/team-reviews-1/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-4-5@20250929:rawPredict"
    )
    assert record.body["anthropic_version"] == ANTHROPIC_API_VERSION and "model" not in record.body
    assert record.headers["authorization"] == f"Bearer {GOOGLE_TOKEN}"
    assert (usage.prompt_tokens, usage.cache_read_tokens) == (15, 12)


def test_vertex_claude_name_implies_the_anthropic_protocol(wire: WireServer, adc: Path) -> None:
    settings = ModelSettings(platform="vertex", name="claude-opus-4-1", region="global")
    assert settings.protocol == "anthropic"
    assert settings.effective_endpoint == "https://aiplatform.googleapis.com"
    assert ModelSettings(platform="vertex", name="gemini-2.5-flash").protocol == "gemini"


@pytest.mark.parametrize(
    ("protocol", "status", "outcome", "words"),
    [
        ("gemini", 403, Outcome.KEY_REJECTED, "roles/aiplatform.user"),
        ("anthropic", 403, Outcome.KEY_REJECTED, "Model Garden"),
        ("anthropic", 404, Outcome.UNKNOWN_MODEL, "not be offered there"),
        ("gemini", 401, Outcome.KEY_REJECTED, "gcloud auth application-default login"),
    ],
)
def test_vertex_faults_are_explained(
    wire: WireServer, adc: Path, protocol: str, status: int, outcome: Outcome, words: str
) -> None:
    wire.script(protocol, [HttpError(status)])
    settings = wire.platform_settings("vertex", protocol, name="m-1", region="europe-west4")
    report = check_model(Config(model=settings))
    assert report.outcome is outcome and report.hint is not None and words in report.hint
    assert GOOGLE_TOKEN not in report.render()
    if status in (401, 403):
        assert f"HTTP {status} (Google credentials rejected)" in report.message
    assert len(wire.requests(protocol)) == 1


def test_vertex_without_google_credentials_sends_nothing(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    settings = wire.platform_settings("vertex", "gemini", name="gemini-2.5-pro", region="us-east1")
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.MISSING_CREDENTIALS
    assert "no Google credentials found" in report.message
    assert "gcloud auth application-default login" in report.message
    assert wire.requests() == []


def test_vertex_refused_token_grant_is_a_credentials_error(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with WireServer() as gone:
        google_adc(monkeypatch, tmp_path, gone)  # its token endpoint is closed below
    settings = wire.platform_settings("vertex", "anthropic", name="claude-x", region="us-east5")
    provider = create_provider(settings)
    with pytest.raises(TransientProviderError) as caught:
        provider.complete(PROBE)
    provider.close()
    assert "Google's token service" in str(caught.value)
    assert wire.requests() == []


def test_vertex_takes_no_api_key(wire: WireServer) -> None:
    settings = wire.platform_settings("vertex", "gemini", name="g", region="us-east1", key="k" * 9)
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.CONFIG and "not an API key" in report.message


# --- Azure OpenAI -----------------------------------------------------------------------


def _azure(wire: WireServer, **fields: object) -> ModelSettings:
    fields.setdefault("key", AZURE_KEY)
    return wire.platform_settings("azure", "openai", name="gpt-4o", **fields)  # type: ignore[arg-type]


def test_azure_deployment_path_api_version_and_key_header(wire: WireServer) -> None:
    wire.script("openai", [Text("OK"), Text("OK")])
    for settings in (
        _azure(wire),
        _azure(wire, deployment="reviews-prod", api_version="2025-04-01-preview"),
    ):
        provider = create_provider(settings)
        try:
            provider.complete(
                ModelRequest(messages=(UserMessage(content="hi"),), max_output_tokens=9)
            )
        finally:
            provider.close()
    first, second = wire.requests("openai")
    assert first.path == "/openai/deployments/gpt-4o/chat/completions"  # default: model.name
    assert parse_qs(first.query) == {"api-version": ["2024-10-21"]}
    assert second.path == "/openai/deployments/reviews-prod/chat/completions"
    assert parse_qs(second.query) == {"api-version": ["2025-04-01-preview"]}
    for record in (first, second):
        assert record.platform == "azure" and record.headers["api-key"] == AZURE_KEY
        assert "authorization" not in record.headers
        assert record.body["max_completion_tokens"] == 9


def test_azure_deployment_not_found_is_explained(wire: WireServer) -> None:
    wire.script("openai", [HttpError(404)])
    report = check_model(Config(model=_azure(wire, deployment="gpt4o-typo")))
    assert report.outcome is Outcome.UNKNOWN_MODEL
    assert report.hint is not None and "deployment 'gpt4o-typo' not found" in report.hint
    assert "DeploymentNotFound" not in report.hint and AZURE_KEY not in report.render()
    assert "[REDACTED]" in report.message  # the server echoed the key: it is never shown


def test_azure_entra_id_token_from_the_sdk_variable(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "eyJ0eXAi.wire-entra.token")
    wire.script("openai", [HttpError(401), Text("OK")])
    refused = check_model(Config(model=_azure(wire, key=None)))
    assert refused.outcome is Outcome.KEY_REJECTED and "AZURE_OPENAI_AD_TOKEN" in str(refused.hint)
    assert "wire-entra" not in refused.render() and "[REDACTED]" in refused.message
    assert check_model(Config(model=_azure(wire, key=None))).ok
    for record in wire.requests("openai"):
        assert record.headers["authorization"] == "Bearer eyJ0eXAi.wire-entra.token"
        assert "api-key" not in record.headers


def test_azure_without_credentials_sends_nothing(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    azure_cli(monkeypatch, tmp_path, logged_in=False)  # the default chain finds nothing
    report = check_model(Config(model=_azure(wire, key=None)))
    assert report.outcome is Outcome.MISSING_CREDENTIALS
    assert "AZURE_OPENAI_API_KEY" in report.message and "az login" in report.message
    assert wire.requests() == []


def test_azure_needs_the_resource_endpoint() -> None:
    settings = ModelSettings(platform="azure", name="gpt-4o", api_key=SecretStr(AZURE_KEY))
    report = check_model(Config(model=settings))
    assert report.outcome is Outcome.CONFIG
    assert "model.endpoint" in report.message and "AZURE_OPENAI_ENDPOINT" in report.message


# --- the same faults on every platform --------------------------------------------------


@pytest.fixture(params=["bedrock", "vertex-gemini", "vertex-anthropic", "azure"])
def platform_settings(
    request: pytest.FixtureRequest,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> tuple[str, ModelSettings]:
    kind = str(request.param)
    if kind == "bedrock":
        aws_credentials(monkeypatch, tmp_path)
        return "anthropic", _bedrock(wire, timeout=10.0)
    if kind == "azure":
        return "openai", _azure(wire, timeout=10.0)
    google_adc(monkeypatch, tmp_path, wire)
    protocol = kind.removeprefix("vertex-")
    return protocol, wire.platform_settings(
        "vertex", protocol, name="m-1", region="us-east5", timeout=10.0
    )


def test_status_faults_are_typed_on_every_platform(
    wire: WireServer, platform_settings: tuple[str, ModelSettings]
) -> None:
    protocol, settings = platform_settings
    wire.script(protocol, [HttpError(429), HttpError(404), HttpError(403), Text("fine")])
    with ProviderPool(settings, 1) as pool:
        for kind in (RetryableStatusError, ModelNotFoundError, ProviderAuthError):
            with pytest.raises(kind) as caught:
                pool.complete(PROBE)
            _secrets_absent(str(caught.value))
        assert pool.complete(PROBE).text == "fine"
        assert pool.meter.totals().requests == 4
    wire.assert_done()


def test_429_is_retried_on_every_platform(
    prefect_tasks: None, wire: WireServer, platform_settings: tuple[str, ModelSettings]
) -> None:
    from tasks.llm import llm_request

    protocol, settings = platform_settings
    wire.script(protocol, [HttpError(429), Text("ok")])
    with ProviderPool(settings, 2) as pool:
        response = llm_request(pool.handle, PROBE, delay=0)
    assert response.text == "ok" and response.attempts == 2
    assert len(wire.requests(protocol)) == 2
    wire.assert_done()


@pytest.mark.parametrize("kind", ["vertex-anthropic", "azure", "azure-entra"])
def test_platform_credentials_never_reach_prefect(
    prefect_harness: None,
    prefect_api_home: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    """A refused request whose error body echoes the credential (Google's token, Azure's key),
    then an answer, in a Prefect flow: the credential is in no log, state, artifact, result or
    the database."""
    import logging

    from prefect import flow, task
    from prefect.artifacts import create_markdown_artifact
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_HOME, PREFECT_LOCAL_STORAGE_PATH

    from flows.local.process import DATABASE_FILE
    from flows.local.settings import prefect_home
    from reviewflow.errors import ProviderError
    from reviewflow.providers.messages import ModelResponse
    from tasks.llm import llm_request

    @task(name="stage", retries=0)
    def fast(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:  # a model stage
        return llm_request(handle, request, delay=0)

    @flow(name="platform-key-scan", persist_result=True)
    def key_scan(handle: ProviderHandle) -> str:
        failed = fast(handle, PROBE, return_state=True)
        error = failed.result(raise_on_failure=False)
        assert isinstance(error, ProviderError)
        answer = fast(handle, PROBE)
        create_markdown_artifact(f"{error}\n\n{answer.text}", key="platform-key-scan")
        return f"{error!r} {answer!r}"

    if kind == "azure":
        protocol, secret, settings = "openai", AZURE_KEY, _azure(wire)
    elif kind == "azure-entra":  # a token from azure-identity's chain (`az login`)
        azure_cli(monkeypatch, tmp_path, logged_in=True)
        protocol, secret, settings = "openai", AZURE_CLI_TOKEN, _azure(wire, key=None)
    else:
        google_adc(monkeypatch, tmp_path, wire)
        protocol, secret = "anthropic", GOOGLE_TOKEN
        settings = wire.platform_settings("vertex", protocol, name="claude-x", region="us-east5")
    for name in (None, "prefect", "openai", "anthropic", "google", "azure", "httpx", "httpx2"):
        caplog.set_level(logging.DEBUG, logger=name)
    wire.script(protocol, [HttpError(401), Text("fine")])
    with ProviderPool(settings, 2) as pool:
        state = key_scan(pool.handle, return_state=True)
        summary = state.result()
    assert state.is_completed() and "[REDACTED]" in summary and secret not in summary
    assert all(secret in r.credential for r in wire.requests(protocol))  # it was sent
    APILogWorker.drain_all()
    out, err = capfd.readouterr()
    assert secret not in out + err and secret not in caplog.text
    database = prefect_home(prefect_api_home) / DATABASE_FILE
    roots = [Path(r) for r in (PREFECT_HOME.value(), PREFECT_LOCAL_STORAGE_PATH.value())]
    roots = [r for r in (*roots, database.parent) if r.exists()]
    leaked = [
        f
        for root in roots
        for f in ([root] if root.is_file() else root.rglob("*"))
        if f.is_file() and secret.encode() in f.read_bytes()
    ]
    assert database.exists() and leaked == []


def test_bedrock_without_botocore_installed_says_how_to_get_it(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(  # as where the bedrock extra was not installed
        "reviewflow.providers.factory.find_spec",
        lambda name: None if name == "botocore" else real(name),
    )
    report = check_model(Config(model=_bedrock(wire)))
    assert report.outcome is Outcome.CONFIG
    assert "pip install 'reviewflow[bedrock]'" in report.message
    assert wire.requests() == []
