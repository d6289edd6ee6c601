"""One TLS context per process for the SDK clients.

Each model request in flight has an SDK client of its own (`deadline.ClientPool`), and each new
client built its own default TLS context, loading the CA bundle again: ~40 ms of CPU per client
here (with `review.concurrency` clients per review). The SDKs' HTTP client (httpx2) builds that
default with `create_ssl_context()`, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`; the same
context, built once per value of those variables, is handed to every client instead.
"""

from __future__ import annotations

import os
import ssl
from functools import cache


def shared_tls_context() -> ssl.SSLContext:
    """The SDKs' default TLS context, built once per `SSL_CERT_FILE`/`SSL_CERT_DIR`."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@cache
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    import httpx2  # the SDKs' HTTP client; it reads the two variables itself

    context: ssl.SSLContext = httpx2.create_ssl_context()
    return context
