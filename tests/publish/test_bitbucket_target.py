"""Which Bitbucket pull request to publish to: flags first, else Bitbucket Pipelines'
variables; SHAs only when Pipelines names them in full; one line naming what is missing."""

from __future__ import annotations

import pytest

from reviewflow.ci import ci_variables
from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError, PublishSetupError
from reviewflow.publish.target import platform_of, request_ref, token_from_env

PIPELINES = {
    "CI": "true",
    "BITBUCKET_BUILD_NUMBER": "42",
    "BITBUCKET_REPO_FULL_NAME": "acme/app",
    "BITBUCKET_PR_ID": "7",
    "BITBUCKET_COMMIT": "a" * 40,
    "BITBUCKET_PR_DESTINATION_COMMIT": "b" * 40,
}


def _settings(**values: object) -> PublishSettings:
    return PublishSettings.model_validate(values)


def test_auto_is_bitbucket_in_pipelines_with_its_pull_request_and_shas() -> None:
    found = request_ref(_settings(target="auto"), PIPELINES)
    assert found is not None
    ref, shas = found
    assert (ref.platform, ref.repo, ref.number, ref.api_url) == (
        "bitbucket",
        "acme/app",
        7,
        "https://api.bitbucket.org/2.0",
    )
    assert (shas.base, shas.head) == ("b" * 40, "a" * 40)
    assert "BITBUCKET_BUILD_NUMBER" in ci_variables(PIPELINES)
    assert platform_of(_settings(target="auto"), {"BITBUCKET_BUILD_NUMBER": ""}) is None


def test_a_short_destination_commit_is_left_to_the_api() -> None:
    env = {**PIPELINES, "BITBUCKET_PR_DESTINATION_COMMIT": "b" * 12, "BITBUCKET_COMMIT": "A" * 40}
    found = request_ref(_settings(target="bitbucket"), env)
    assert found is not None and (found[1].base, found[1].head) == (None, "a" * 40)


def test_flags_name_another_request_and_then_the_pipeline_shas_do_not_apply() -> None:
    api = "https://bitbucket.example.com"
    settings = _settings(target="bitbucket", repo="PROJ/app", pull_request=3, api_url=api)
    found = request_ref(settings, PIPELINES)
    assert found is not None
    ref, shas = found
    assert (ref.repo, ref.number, ref.api_url) == ("PROJ/app", 3, api)
    assert (shas.base, shas.head) == (None, None)
    other_repo = request_ref(_settings(target="bitbucket", repo="acme/other"), PIPELINES)
    assert other_repo is not None and other_repo[1].head is None  # PR 7 of another repository


@pytest.mark.parametrize(
    ("env", "settings", "message"),
    [
        ({}, {}, "--platform-repo WORKSPACE/REPO_SLUG"),
        ({"BITBUCKET_REPO_FULL_NAME": "acme/app"}, {}, "--pull-request N"),
        ({}, {"repo": "acme/group/app", "pull_request": 1}, "is WORKSPACE/REPO_SLUG"),
    ],
)
def test_what_is_missing_is_one_line(
    env: dict[str, str], settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        request_ref(_settings(target="bitbucket", **settings), env)
    assert "\n" not in str(caught.value) and caught.value.exit_code == 2


def test_the_token_comes_from_the_bitbucket_variables() -> None:
    env = {"BITBUCKET_TOKEN": "ATCTT3x-repo-token", "GITHUB_TOKEN": "ghp_x"}
    assert token_from_env("bitbucket", env).get_secret_value() == "ATCTT3x-repo-token"
    assert token_from_env(
        "bitbucket", {**env, "REVIEWFLOW_BITBUCKET_TOKEN": "ATCTT3x-preferred"}
    ).get_secret_value() == ("ATCTT3x-preferred")
    with pytest.raises(PublishSetupError, match="REVIEWFLOW_BITBUCKET_TOKEN or BITBUCKET_TOKEN"):
        token_from_env("bitbucket", {"GITHUB_TOKEN": "ghp_x"})


@pytest.mark.parametrize(
    ("api_url", "expected"),
    [
        ("https://api.bitbucket.org", "https://api.bitbucket.org/2.0"),
        ("https://api.bitbucket.org/2.0/", "https://api.bitbucket.org/2.0"),
        ("https://bitbucket.org", "https://api.bitbucket.org/2.0"),
        ("https://bitbucket.example.com", "https://bitbucket.example.com"),
    ],
)
def test_cloud_s_host_in_any_form_is_cloud_and_any_other_is_data_center(
    api_url: str, expected: str
) -> None:
    settings = _settings(target="bitbucket", repo="acme/app", pull_request=5, api_url=api_url)
    found = request_ref(settings, {})
    assert found is not None and found[0].api_url == expected
