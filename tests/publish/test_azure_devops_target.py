"""Which Azure DevOps pull request to publish to: flags first, else Azure Pipelines' variables;
what is missing is one line naming the flag; the token from its three variables in order."""

from __future__ import annotations

import pytest

from reviewflow.ci import is_ci
from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError, PublishSetupError
from reviewflow.publish.target import platform_of, request_ref, token_from_env, token_source

PIPELINE = {
    "TF_BUILD": "True",
    "SYSTEM_COLLECTIONURI": "https://dev.azure.com/fabrikam/",
    "SYSTEM_TEAMPROJECT": "Fabrikam Fiber",
    "BUILD_REPOSITORY_NAME": "app",
    "SYSTEM_PULLREQUEST_PULLREQUESTID": "17",
    "SYSTEM_PULLREQUEST_SOURCECOMMITID": "h" * 40,
}


def _settings(**values: object) -> PublishSettings:
    return PublishSettings.model_validate(values)


def test_auto_in_azure_pipelines_is_its_pull_request_and_head() -> None:
    assert is_ci({"TF_BUILD": "True"})
    found = request_ref(_settings(target="auto"), PIPELINE)
    assert found is not None
    ref, shas = found
    assert (ref.platform, ref.repo, ref.number, ref.api_url) == (
        "azure",
        "Fabrikam Fiber/app",
        17,
        "https://dev.azure.com/fabrikam",
    )
    assert (shas.base, shas.head) == (None, "h" * 40)  # the base: the pull request's own
    assert platform_of(_settings(target="auto"), {"TF_BUILD": "False"}) is None


@pytest.mark.parametrize("provider", ["GitHub", "Bitbucket", "Git"])
def test_auto_publishes_nowhere_for_a_repository_azure_repos_does_not_host(provider: str) -> None:
    on_github = {**PIPELINE, "BUILD_REPOSITORY_PROVIDER": provider, "BUILD_REPOSITORY_NAME": "o/a"}
    assert platform_of(_settings(target="auto"), on_github) is None
    tfs = {**PIPELINE, "BUILD_REPOSITORY_PROVIDER": "TfsGit"}
    assert platform_of(_settings(target="auto"), tfs) == "azure"


def test_flags_win_and_another_pull_request_takes_no_sha_of_the_event() -> None:
    settings = _settings(
        target="azure",
        repo="Other Project/web",
        pull_request=3,
        api_url="https://ado.example.com/tfs/DefaultCollection",
    )
    found = request_ref(settings, PIPELINE)
    assert found is not None
    ref, shas = found
    assert (ref.repo, ref.number, ref.api_url) == (
        "Other Project/web",
        3,
        "https://ado.example.com/tfs/DefaultCollection",
    )
    assert shas.head is None


@pytest.mark.parametrize(
    ("drop", "flag"),
    [
        ("SYSTEM_PULLREQUEST_PULLREQUESTID", "--pull-request N"),
        ("BUILD_REPOSITORY_NAME", "--platform-repo PROJECT/REPOSITORY"),
        ("SYSTEM_COLLECTIONURI", "--api-url https://dev.azure.com/ORG"),
    ],
)
def test_what_is_missing_is_named(drop: str, flag: str) -> None:
    env = {k: v for k, v in PIPELINE.items() if k != drop}
    with pytest.raises(ConfigError, match=flag):
        request_ref(_settings(target="azure"), env)


def test_a_repository_of_three_parts_is_refused() -> None:
    with pytest.raises(
        ConfigError, match="'org/p/r': an Azure DevOps repository is PROJECT/REPOSITORY"
    ):
        request_ref(_settings(target="azure", repo="org/p/r"), PIPELINE)


@pytest.mark.parametrize(
    ("api_url", "hint"),
    [
        ("https://dev.azure.com/fabrikam/Fabrikam%20Fiber", "give https://dev.azure.com/fabrikam"),
        ("https://dev.azure.com/fabrikam/p/_git/app", "give https://dev.azure.com/fabrikam"),
        ("https://ado.example.com/tfs/Main/p/_git/app", "give the collection URL"),
    ],
)
def test_a_project_or_repository_page_as_the_collection_is_named(api_url: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=f"is a project or repository page: {hint}"):
        request_ref(_settings(target="azure", api_url=api_url), PIPELINE)


def test_the_token_comes_from_its_variables_in_order() -> None:
    env = {"SYSTEM_ACCESSTOKEN": "job", "AZURE_DEVOPS_EXT_PAT": "pat"}
    assert token_from_env("azure", env).get_secret_value() == "pat"
    env["REVIEWFLOW_AZURE_DEVOPS_TOKEN"] = "ours"
    assert token_from_env("azure", env).get_secret_value() == "ours"
    with pytest.raises(PublishSetupError, match="SYSTEM_ACCESSTOKEN must be printable"):
        token_from_env("azure", {"SYSTEM_ACCESSTOKEN": "two words"})
    with pytest.raises(PublishSetupError, match="set REVIEWFLOW_AZURE_DEVOPS_TOKEN or"):
        token_from_env("azure", {})


def test_a_refusal_names_the_variable_the_token_came_from() -> None:
    env = {"SYSTEM_ACCESSTOKEN": "job", "AZURE_DEVOPS_EXT_PAT": "stale"}  # a PAT left on the agent
    assert token_source("azure", env, None) == (
        "from AZURE_DEVOPS_EXT_PAT, the first set of REVIEWFLOW_AZURE_DEVOPS_TOKEN,"
        " AZURE_DEVOPS_EXT_PAT, SYSTEM_ACCESSTOKEN"
    )
    assert token_source("azure", env, "ado-token") == ("from the Secret block 'ado-token'")
