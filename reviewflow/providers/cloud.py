"""Cloud platform credentials: each platform's own chain, its failures typed in the user's terms.

Nothing here reads a credential into reviewflow's config: Google's Application Default
Credentials and botocore's chain (profile, environment, role) are asked when a request is
signed, and an Azure key comes in as `model.api_key` like any other; without one (nor a
ready-made token) azure-identity's DefaultAzureCredential is asked for each Entra ID token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reviewflow.providers import failures

GOOGLE_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_AWS_NO_CREDENTIALS = "Could not resolve AWS credentials"  # anthropic's Bedrock client says so
AWS_CHAIN = (
    "AWS_PROFILE, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, or an instance or task "
    "role; or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK"
)
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
AZURE_CHAIN = (
    "run `az login`, run with a managed identity, set AZURE_CLIENT_ID, AZURE_TENANT_ID and "
    "AZURE_CLIENT_SECRET, or set AZURE_OPENAI_API_KEY to the resource's key"
)
GOOGLE_CHAIN = (
    "run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a "
    "credentials file, or run with an attached service account"
)


class GoogleCredentials:
    """Google's Application Default Credentials for one provider, loaded once (on the first
    request, not at start-up) and shared by its clients, with the project to bill."""

    def __init__(self, protocol: str, model: str, project: str | None) -> None:
        self._where = (protocol, model)
        self._project = project
        self._lock = threading.Lock()
        self._loaded: tuple[Any, str] | None = None

    def get(self) -> tuple[Any, str]:
        """(credentials, project); MissingCredentialsError when ADC or a project is missing."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def tokens(self) -> tuple[str, ...]:
        """The access token requests carry now (none before the first request)."""
        with self._lock:
            token = getattr(self._loaded[0], "token", None) if self._loaded else None
        return (token,) if isinstance(token, str) and token else ()

    def _load(self) -> tuple[Any, str]:
        import google.auth
        from google.auth import exceptions

        try:
            credentials, found = google.auth.default(scopes=GOOGLE_SCOPES)
        except exceptions.GoogleAuthError as exc:
            raise failures.missing_credentials_error(
                *self._where,
                f"no Google credentials found ({_first_sentence(exc)}): {GOOGLE_CHAIN}",
            ) from None
        project = self._project or found
        if not project:
            raise failures.missing_credentials_error(
                *self._where,
                "no Google Cloud project: set model.project or GOOGLE_CLOUD_PROJECT",
            )
        return credentials, project


def google_auth_failure(protocol: str, model: str, exc: Exception) -> failures.ProviderFailure:
    """The typed error for a google-auth failure while a request was signed."""
    from google.auth import exceptions

    detail = failures.one_line(_first_sentence(exc))
    if isinstance(exc, exceptions.DefaultCredentialsError):
        return failures.missing_credentials_error(
            protocol, model, f"no Google credentials found ({detail}): {GOOGLE_CHAIN}"
        )
    if isinstance(exc, exceptions.TransportError):
        return failures.EndpointUnreachableError(
            f"{protocol} model '{model}': Google's token service could not be reached ({detail})"
        )
    if isinstance(exc, exceptions.RefreshError) and exc.retryable:
        return failures.RetryableStatusError(
            f"{protocol} model '{model}': Google's token service is failing ({detail})"
        )
    return failures.ProviderAuthError(
        f"{protocol} model '{model}': the Google credentials were refused ({detail})"
    )


def google_auth_errors() -> tuple[type[Exception], ...]:
    """google-auth's base error, for the adapters' `except` clauses."""
    from google.auth import exceptions

    return (exceptions.GoogleAuthError,)


def aws_failure(protocol: str, model: str, exc: Exception) -> failures.ProviderFailure | None:
    """The typed error for an AWS credential failure while a request was signed (None: not one
    of those)."""
    from botocore import exceptions

    if isinstance(exc, exceptions.ProfileNotFound):
        return failures.missing_credentials_error(
            protocol, model, f"{exc} (check AWS_PROFILE): AWS credentials come from {AWS_CHAIN}"
        )
    if isinstance(exc, exceptions.BotoCoreError):
        return failures.missing_credentials_error(
            protocol, model, f"AWS credentials unusable ({_first_sentence(exc)}): {AWS_CHAIN}"
        )
    if isinstance(exc, RuntimeError) and str(exc).startswith(_AWS_NO_CREDENTIALS):
        return failures.missing_credentials_error(
            protocol, model, f"no AWS credentials found: set {AWS_CHAIN}"
        )
    return None


def aws_errors() -> tuple[type[Exception], ...]:
    """What signing a Bedrock request raises when AWS credentials are missing or unusable."""
    from botocore import exceptions

    return (exceptions.BotoCoreError, RuntimeError)


def _first_sentence(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    return failures.one_line(text.split("\n", 1)[0], limit=160)


def azure_token_provider() -> Callable[[], str]:
    """A callable giving a fresh Entra ID token for Azure OpenAI from azure-identity's default
    chain (environment, workload and managed identity, `az login`, ...): asked, and cached by
    azure-identity, when a request is sent; the token is never held in settings."""
    from azure.identity import DefaultAzureCredential, get_bearer_token_provider

    return get_bearer_token_provider(DefaultAzureCredential(), AZURE_SCOPE)


def azure_errors() -> tuple[type[Exception], ...]:
    """What azure-identity raises when its chain finds no credential or the sign-in fails."""
    from azure.core.exceptions import ClientAuthenticationError

    return (ClientAuthenticationError,)


def azure_failure(protocol: str, model: str) -> failures.ProviderFailure:
    """The typed error for an Entra ID token the default chain could not get (its own message
    lists every credential it tried, in its terms: the user gets the ways to sign in)."""
    return failures.missing_credentials_error(
        protocol, model, f"no Microsoft Entra ID credentials for Azure OpenAI: {AZURE_CHAIN}"
    )
