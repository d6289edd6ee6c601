"""Every way `complete` can fail is a typed, redacted, one-line ProviderError raised `from None`."""

from __future__ import annotations

import socket
import time
import traceback
from typing import Any

import pytest
from pydantic import SecretStr

from reviewflow.config import ModelSettings
from reviewflow.errors import PermanentProviderError, ProviderError
from reviewflow.providers import ModelRequest, UserMessage, create_provider
from reviewflow.providers.failures import (
    BudgetExceeded,
    EndpointUnreachableError,
    MalformedAnswerError,
    MissingCredentialsError,
    ProviderAuthError,
    ProviderTimeoutError,
    UnsendableRequestError,
    never_reached,
    unsendable_error,
)
from tests.wire_server import TEST_KEY, Empty, Raw, Text, Trickle, WireServer

REQUEST = ModelRequest(system="sys", messages=(UserMessage(content="hi"),))
NON_ASCII_KEY = "sk-wire-tëst-Zq9VXk2LmP4sT7uY"
WRONG_ANSWERS = [
    Raw(200, b"<html>captive portal</html>", content_type="text/html"),
    Raw(200, b"not json"),
    Raw(200, b"\xff\xfe not utf-8"),
    Raw(200, {"weird": 1}),
    Raw(200, {"error": "x"}),
    Raw(200, []),
    Raw(200, None),
]


def _unchecked_settings(protocol: str, endpoint: str, key: str = TEST_KEY) -> ModelSettings:
    """Settings the config would refuse, as another caller might still build them."""
    return ModelSettings.model_construct(
        protocol=protocol,
        name="test-model",
        endpoint=endpoint,
        timeout=2.0,
        api_key=SecretStr(key),
    )


def _assert_clean(error: ProviderError, *secrets: str) -> None:
    """One line, raised `from None`, no chained SDK error, no secret anywhere in it."""
    message = str(error)
    assert "\n" not in message
    assert error.__cause__ is None and error.__suppress_context__
    assert error.__context__ is None  # the SDK error it replaced may hold the key
    text = "".join(traceback.format_exception(error)) + repr(error) + repr(error.args)
    for secret in secrets:
        assert secret not in text


@pytest.mark.parametrize("reply", WRONG_ANSWERS, ids=lambda r: repr(r.body)[:24])
def test_an_answer_of_the_wrong_shape_is_a_clear_permanent_error(
    wire: WireServer, protocol: str, reply: Raw
) -> None:
    wire.script(protocol, [reply])
    with pytest.raises(MalformedAnswerError) as caught:
        create_provider(wire.settings(protocol)).complete(REQUEST)
    assert isinstance(caught.value, PermanentProviderError)  # never retried
    assert f"not a valid {protocol} response" in str(caught.value)
    assert "check model.protocol and model.endpoint" in str(caught.value)
    _assert_clean(caught.value, TEST_KEY)


def test_gemini_empty_answer_with_usage_is_still_transient(wire: WireServer) -> None:
    wire.script("gemini", [Empty()])
    with pytest.raises(ProviderError) as caught:
        create_provider(wire.settings("gemini")).complete(REQUEST)
    assert not isinstance(caught.value, PermanentProviderError)
    assert "empty answer" in str(caught.value)


@pytest.mark.parametrize(
    "endpoint",
    ["http://[::1/v1", "http://\u2603..x/v1", "http://127.0.0.1:80x/v1", "ftp://127.0.0.1"],
)
def test_an_unusable_endpoint_is_a_permanent_config_error(protocol: str, endpoint: str) -> None:
    provider = create_provider(_unchecked_settings(protocol, endpoint))
    with pytest.raises(UnsendableRequestError) as caught:
        provider.complete(REQUEST)
    assert isinstance(caught.value, PermanentProviderError)
    assert "check model.endpoint" in str(caught.value)
    _assert_clean(caught.value, TEST_KEY)


def test_a_host_the_resolver_cannot_encode_is_a_permanent_config_error(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def lookup(host: str, *args: object, **kwargs: object) -> Any:
        host.encode("idna")  # what getaddrinfo does first: UnicodeError for 'a_b..c'
        raise AssertionError(f"no lookup expected for {host!r}")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    provider = create_provider(_unchecked_settings(protocol, "http://a_b..c/v1"))
    with pytest.raises(UnsendableRequestError, match="UnicodeError") as caught:
        provider.complete(REQUEST)
    _assert_clean(caught.value, TEST_KEY)


def test_a_non_ascii_key_is_never_sent_nor_shown(wire: WireServer, protocol: str) -> None:
    settings = _unchecked_settings(protocol, wire.base_url(protocol), key=NON_ASCII_KEY)
    with pytest.raises(UnsendableRequestError, match="not printable ASCII") as caught:
        create_provider(settings).complete(REQUEST)
    _assert_clean(caught.value, NON_ASCII_KEY, NON_ASCII_KEY[9:], "tëst")
    assert wire.requests() == []


def test_an_encoding_error_never_shows_the_text_it_could_not_encode() -> None:
    problem = UnicodeEncodeError("ascii", f"Bearer {NON_ASCII_KEY}", 16, 17, "ordinal not in range")
    error = unsendable_error("openai", "m", "http://127.0.0.1/v1", problem, NON_ASCII_KEY)
    assert "not ASCII" in str(error) and NON_ASCII_KEY[9:] not in repr(error)


def test_text_that_is_not_utf8_is_never_blamed_on_the_key() -> None:
    """Issue 37 item 1: a request body that cannot be UTF-8 is not a header problem."""
    problem = UnicodeEncodeError("utf-8", "name = 'M\udcfcller'", 10, 11, "surrogates not allowed")
    error = unsendable_error("openai", "m", "http://127.0.0.1/v1", problem, TEST_KEY)
    assert str(error) == (
        "openai model 'm': cannot send a request to http://127.0.0.1/v1 "
        "(its text is not valid UTF-8): the request was not sent"
    )
    assert "API key" not in str(error)


def test_a_request_holding_bytes_that_are_not_utf8_is_sent_readably(
    wire: WireServer, protocol: str
) -> None:
    """A file name's bytes kept as surrogates reach the model as `\\xNN`, never a failure."""
    wire.script(protocol, [Text("ok")])
    name = b"caf\xe9.py".decode("utf-8", "surrogateescape")
    request = ModelRequest(system=f"Review {name}", messages=(UserMessage(content=name),))
    response = create_provider(wire.settings(protocol)).complete(request)
    assert response.text == "ok"
    [sent] = wire.requests(protocol)
    assert "caf\\xe9.py" in _strings(sent.body)


def _strings(value: object) -> list[str]:
    """Every string of a JSON document, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def test_a_refused_connection_is_said_in_plain_words(protocol: str) -> None:
    """Issue 37 item 20: not `ConnectError: [Errno 111] Connection refused`."""
    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        endpoint = f"http://127.0.0.1:{port}/v1"
        provider = create_provider(_unchecked_settings(protocol, endpoint))
        with pytest.raises(EndpointUnreachableError) as caught:
            provider.complete(REQUEST)
    message = str(caught.value)
    assert message.startswith(f"{protocol} model 'test-model': could not reach the model at ")
    assert message.endswith(": connection refused")
    assert "Errno" not in message and "ConnectError" not in message
    _assert_clean(caught.value, TEST_KEY)


def test_only_requests_that_left_count_as_attempts() -> None:
    assert never_reached(BudgetExceeded("x")) and never_reached(UnsendableRequestError("x"))
    assert never_reached(MissingCredentialsError("x"))
    assert not never_reached(ProviderAuthError("x"))
    assert not never_reached(EndpointUnreachableError("x"))


def test_a_trickling_answer_times_out_at_the_deadline(wire: WireServer, protocol: str) -> None:
    timeout = 0.6
    wire.script(protocol, [Trickle(seconds=3.6, interval=0.2), Text("after")])
    provider = create_provider(wire.settings(protocol, timeout=timeout))
    started = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"within 0\.6s") as caught:
        provider.complete(REQUEST)
    elapsed = time.monotonic() - started
    assert elapsed < 3 * timeout, f"answered late: {elapsed:.2f}s"
    _assert_clean(caught.value, TEST_KEY)
    assert provider.complete(REQUEST).text == "after"  # a fresh client, not the abandoned one
    provider.close()
