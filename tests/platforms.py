"""Cloud platform credentials for tests, through each platform's real chain, without the network.

- AWS: fake access keys in the environment (botocore's chain reads them); config files that do
  not exist and no instance metadata, so nothing of the developer's is read.
- Google: Application Default Credentials from a service account file made here (a fresh RSA
  key) whose `token_uri` is the wire server's token endpoint: google-auth signs its JWT grant
  and trades it for `GOOGLE_TOKEN` on 127.0.0.1.
- SigV4: a recorded request's signature recomputed with botocore from the fake secret.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import pytest

from tests.wire_server import RecordedRequest, WireServer

AWS_ACCESS_KEY = "AKIDWIRETEST0EXAMPLE"
AWS_SECRET_KEY = "wire/Secret+Key0Never1Sent2Anywhere3Zq9"
AWS_SESSION_TOKEN = "FwoGZXIvYXdzEWireTestSessionToken7Lp"
GOOGLE_PROJECT = "adc-project-42"
SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)


def _clear_aws_sessions() -> None:
    """anthropic's Bedrock client keeps one boto3 session per set of arguments (a process's
    credentials are found once): each test starts without one."""
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()


def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """botocore's chain with nothing to find, and never the instance metadata service."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    _clear_aws_sessions()


def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake temporary AWS credentials in the environment, as a CI job's role gives them."""
    no_aws_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION_TOKEN)


def verify_sigv4(record: RecordedRequest, region: str) -> dict[str, str]:
    """Assert `record` carries a valid SigV4 signature by the fake credentials for Bedrock in
    `region` (recomputed with botocore over the signed headers and the body); its parts."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    match = SIGV4.fullmatch(record.headers["authorization"])
    assert match, record.headers["authorization"]
    parts = match.groupdict()
    assert parts["key"] == AWS_ACCESS_KEY and parts["region"] == region
    assert parts["service"] == "bedrock"
    signed = parts["signed"].split(";")
    assert {"host", "x-amz-date", "x-amz-security-token"} <= set(signed)
    headers = {name: record.headers[name] for name in signed}
    url = f"http://{record.headers['host']}{record.path}"
    request = AWSRequest(method="POST", url=url, headers=headers, data=record.raw)
    request.context["timestamp"] = record.headers["x-amz-date"]
    signer = SigV4Auth(
        Credentials(AWS_ACCESS_KEY, AWS_SECRET_KEY, AWS_SESSION_TOKEN), "bedrock", region
    )
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    assert parts["signature"] == expected
    return parts


@functools.cache
def _private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def google_adc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, wire: WireServer) -> Path:
    """Application Default Credentials: a service account file whose token endpoint is `wire`."""
    info = {
        "type": "service_account",
        "project_id": GOOGLE_PROJECT,
        "private_key_id": "wire-test-key",
        "private_key": _private_key_pem(),
        "client_email": f"reviewflow@{GOOGLE_PROJECT}.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": f"{wire.url}/token",
    }
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return path


AZURE_CLI_TOKEN = "tok-from-cli.wire-entra-7c41"
_AZ_TOKEN = {
    "accessToken": AZURE_CLI_TOKEN,
    "expiresOn": "2099-01-01 00:00:00.000000",
    "expires_on": 4070908800,
    "tokenType": "Bearer",
}


def azure_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, logged_in: bool) -> Path:
    """azure-identity's default chain narrowed by its own AZURE_TOKEN_CREDENTIALS to the Azure
    CLI (managed identity would probe the metadata service), with a fake `az` first on PATH: it
    prints a token for the Cognitive Services resource, or says to run `az login`. Returns the
    file each `az` call's arguments are appended to."""
    for name in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_USERNAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AZURE_OPENAI_AD_TOKEN", raising=False)
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")
    bin_dir, calls = tmp_path / "az-bin", tmp_path / "az-calls"
    bin_dir.mkdir()
    answer = (
        f"printf '%s' '{json.dumps(_AZ_TOKEN)}'"
        if logged_in
        else "echo \"ERROR: Please run 'az login' to setup account.\" >&2; exit 1"
    )
    script = bin_dir / "az"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n{answer}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return calls
