"""`--verify` settings: defaults, flags over the config file, `config set`, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli.main import main
from flows.cli.parser import build_parser
from flows.cli.review import flag_overrides
from reviewflow.config import get_value, load_config


def _effective(home: Path, *flags: str) -> tuple[bool, str | None, int]:
    args = build_parser().parse_args(["review", *flags])
    review = load_config(home, {}, flag_overrides(args)).review
    return review.verify, review.verify_model, review.verify_budget


def test_off_by_default_and_flags_override_the_file(rf_home: Path) -> None:
    assert _effective(rf_home) == (False, None, 4)
    (rf_home / "config.yaml").write_text("review:\n  verify: true\n  verify_budget: 2\n")
    assert _effective(rf_home) == (True, None, 2)
    assert _effective(rf_home, "--no-verify") == (False, None, 2)
    assert _effective(rf_home, "--verify-model", "small-1.5") == (True, "small-1.5", 2)
    (rf_home / "config.yaml").write_text("review:\n  verify_model: small\n")
    assert _effective(rf_home) == (False, "small", 4)  # a model name alone turns nothing on
    assert _effective(rf_home, "--verify") == (True, "small", 4)
    assert _effective(rf_home, "--no-verify", "--verify-model", "x") == (False, "x", 4)


def test_config_set_keeps_a_model_name_as_typed(rf_home: Path) -> None:
    assert main(["config", "set", "review.verify_model", "1.5"]) == 0
    assert get_value(load_config(rf_home, {}), "review.verify_model") == "1.5"
    assert main(["config", "set", "review.verify", "true"]) == 0
    assert load_config(rf_home, {}).review.verify is True


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("review.verify_budget", "-1", "'review.verify_budget': -1 (accepted: an integer from 0"),
        ("review.verify_budget", "51", "'review.verify_budget': 51 (accepted: an integer from 0"),
        ("review.verify", "maybe", "'review.verify': 'maybe'"),
    ],
)
def test_bad_values_are_named(
    rf_home: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, message: str
) -> None:
    assert main(["config", "set", key, value]) == 2
    assert message in capsys.readouterr().err
