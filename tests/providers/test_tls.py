"""The SDK clients' TLS context: built once per process and per SSL_CERT_FILE/SSL_CERT_DIR."""

from __future__ import annotations

import ssl

import certifi
import pytest

from reviewflow.providers.tls import shared_tls_context


def test_one_context_per_trust_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = shared_tls_context()
    assert isinstance(default, ssl.SSLContext) and default is shared_tls_context()
    assert default.verify_mode == ssl.CERT_REQUIRED and default.check_hostname
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())  # a user's own CA bundle is honoured
    own = shared_tls_context()
    assert own is not default and own is shared_tls_context()
    assert own.cert_store_stats()["x509_ca"] > 0
