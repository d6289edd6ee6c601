"""A deployed run's bad settings are named by the parameter that held them (`overrides`,
`platform_repo`), never by a CLI flag the run never had."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.deployed import ci_review, deployed_config
from reviewflow.errors import ConfigError


def test_an_override_is_named_in_the_overrides_parameter(rf_home: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        deployed_config({"review": {"concurrency": 0}}, {"REVIEWFLOW_HOME": str(rf_home)})
    assert str(refused.value) == (
        "invalid value for 'review.concurrency' in the 'overrides' parameter: 0 "
        "(accepted: an integer from 1 to 64)"
    )


@pytest.mark.usefixtures("prefect_harness")
def test_a_bad_platform_repo_is_named_by_its_parameter(tmp_path: Path) -> None:
    state = ci_review(
        str(tmp_path),
        platform="github",
        platform_repo="not a repo!",
        pull_request=3,
        return_state=True,
    )
    assert state.is_failed()
    message = str(state.message)
    assert "invalid value for the 'platform_repo' parameter: 'not a repo!'" in message
    assert "--platform-repo" not in message


def test_the_platform_parameter_offers_every_registered_platform() -> None:
    from prefect.utilities.callables import parameter_schema

    from reviewflow.platforms import platform_names

    schema = parameter_schema(ci_review.fn).model_dump()["properties"]["platform"]
    [choices] = [option["enum"] for option in schema["anyOf"] if "enum" in option]
    assert choices == list(platform_names())
