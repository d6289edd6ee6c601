"""`--language` (and output.language from the config file or env): a known BCP 47 tag, else
one line and exit 2 before any review starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config.language import is_known_tag
from tests.gitutil import GitRepo

GOOD = [
    "en",
    "en-US",
    "de-DE",
    "pt-BR",
    "zh-Hant",
    "sr-Latn-RS",
    "es-419",
    "EN-us",
    "fil",
    "de-CH-1996",
    "en-US-x-twain",
    "ca-ES-valencia",
    # The IANA registry (langcodes) knows what an ISO code list alone does not: grandfathered
    # and extended-language tags, and private-use language codes.
    "sgn-BE-FR",
    "zh-min-nan",
    "qaa",
]
BAD = [
    "xx-YY",
    "xx",
    "en-YY",
    "zh-Hanx",
    "garbage",
    "",
    "en-",
    "-en",
    "en--US",
    "e",
    "en_US",
    "12",
    "en-US-US",
    "de-1996-1996",
    "en-x",
    "en-a-bb-a-cc",
    "en-US-abcde",  # well-formed, but no such variant is registered
    "en_US",  # a POSIX locale, which langcodes would read as en-US: not a BCP 47 tag
]


@pytest.mark.parametrize("tag", GOOD)
def test_known_tags_are_accepted(tag: str) -> None:
    assert is_known_tag(tag)


@pytest.mark.parametrize("tag", BAD)
def test_unknown_or_malformed_tags_are_refused(tag: str) -> None:
    assert not is_known_tag(tag)


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_no_language_code_data_is_shipped() -> None:
    """The codes come from langcodes (MIT); the LGPL list from Debian's iso-codes is gone."""
    package = Path(is_known_tag.__code__.co_filename).parent
    assert not (package / "language_codes.json").exists()
    assert is_known_tag("en-US") and not is_known_tag("en-US-abcde")


def test_the_flag_is_checked_up_front(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.write("a.py", "x = 1\n")
    err = _refused(capsys, ["review", "--preview", "--repo", str(repo.root), "--language", "xx-YY"])
    assert err.startswith("reviewflow: error: invalid value for --language: 'xx-YY' (accepted: ")


def test_the_config_file_and_env_are_checked(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write("a.py", "x = 1\n")
    home = Path(str(repo.root)).parent / "rfhome"
    home.mkdir()
    (home / "config.yaml").write_text("output:\n  language: xx-YY\n")
    monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
    err = _refused(capsys, ["review", "--preview", "--repo", str(repo.root)])
    assert "invalid value for 'output.language'" in err and "'xx-YY'" in err
    err = _refused(capsys, ["config", "set", "output.language", "xx-YY"])
    assert "'xx-YY'" in err
