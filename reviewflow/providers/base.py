"""The `Provider` interface: one model behind one protocol, its failures typed."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Generic

from reviewflow.config import ModelSettings
from reviewflow.errors import ProviderError
from reviewflow.providers import failures
from reviewflow.providers.deadline import Abandoned, ClientPool, ClientT, DeadlineExceeded
from reviewflow.providers.messages import ModelRequest, ModelResponse, readable

_PRINTABLE_ASCII = re.compile(r"[!-~]+")


class Provider(ABC, Generic[ClientT]):
    """One model behind one protocol. `complete` raises Transient/PermanentProviderError only.

    Each request in flight uses an SDK client of its own (idle ones are reused) and must
    finish within `timeout` seconds in total (see `reviewflow.providers.deadline`).
    """

    protocol: str  # its name in reviewflow.config.protocols: the settings' (a plugin protocol
    # speaking a built-in wire through that protocol's adapter is named as configured)
    credential = "API key"  # what a 401/403 refused, as its errors say

    def __init__(self, settings: ModelSettings) -> None:
        self.protocol = settings.protocol
        self._settings = settings
        self._model = settings.name
        self._endpoint = settings.effective_endpoint
        self._timeout = settings.timeout
        self._key = settings.api_key.get_secret_value() if settings.api_key else None
        self._clients: ClientPool[ClientT] = ClientPool(self._new_client)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send one request (no SDK retries) within the timeout and normalize the answer."""
        try:
            return self._complete(request)
        except ProviderError as exc:
            exc.__context__ = None  # the SDK error it replaced may hold the key (args, body)
            exc.__suppress_context__ = True
            secrets = self._sent_secrets()
            if secrets and exc.args:  # e.g. a platform's token, echoed in an error body
                exc.args = (failures.redact(str(exc.args[0]), secrets), *exc.args[1:])
            raise

    def _complete(self, request: ModelRequest) -> ModelResponse:
        """`complete`, with whatever escaped the adapter's own mapping typed here."""
        name = self.protocol
        if self._key is not None and not _PRINTABLE_ASCII.fullmatch(self._key):
            # Some SDKs would send it as UTF-8, others fail with it in the error's args.
            raise failures.unusable_key_error(name, self._model)
        try:
            sent = readable(request)  # a name's bytes that are not UTF-8, as `\\xNN`
            return self._clients.run(lambda client: self._send(client, sent), self._timeout)
        except DeadlineExceeded:
            raise failures.timeout_error(name, self._model, self._timeout) from None
        except Abandoned:
            raise failures.abandoned_error(name, self._model) from None
        except (json.JSONDecodeError, UnicodeDecodeError):  # a 2xx body that is not JSON text
            raise failures.malformed_answer_error(name, self._model, self._endpoint) from None
        except failures.UNSENDABLE as exc:
            raise failures.unsendable_error(
                name, self._model, self._endpoint, exc, self._key
            ) from None

    def _sent_secrets(self) -> tuple[str, ...]:
        """Credentials other than the API key that requests carry (a cloud platform's token):
        redacted from every error, like the key."""
        return ()

    def close(self) -> None:
        """Release the SDK clients' connections; requests in flight are abandoned at once."""
        self._clients.close()

    @abstractmethod
    def _new_client(self) -> ClientT:
        """A new SDK client for these settings, SDK retries off."""

    @abstractmethod
    def _send(self, client: ClientT, request: ModelRequest) -> ModelResponse:
        """One SDK call, its failures typed, its answer normalized."""
