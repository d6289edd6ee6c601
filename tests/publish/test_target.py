"""Which request to publish to and with which token: flags and config first, else the CI
environment; what is missing is one line naming what to set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError, PublishSetupError, ReviewError
from reviewflow.publish.target import request_ref, token_from_env


def _settings(**values: object) -> PublishSettings:
    return PublishSettings.model_validate(values)


def test_auto_is_github_in_actions_gitlab_in_gitlab_ci_and_off_elsewhere(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    pull = {"number": 12, "base": {"sha": "b" * 40}, "head": {"sha": "h" * 40}}
    event.write_text(json.dumps({"pull_request": pull}))
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_API_URL": "https://ghe.example.com/api/v3",
    }
    found = request_ref(_settings(target="auto"), github)
    assert found is not None
    ref, shas = found
    assert (ref.platform, ref.repo, ref.number, ref.api_url) == (
        "github",
        "acme/app",
        12,
        "https://ghe.example.com/api/v3",
    )
    assert (shas.base, shas.head) == ("b" * 40, "h" * 40)
    gitlab = {
        "GITLAB_CI": "true",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "5",
        "CI_API_V4_URL": "https://gl.example.com/api/v4",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": "c" * 40,
    }
    found = request_ref(_settings(target="auto"), gitlab)
    assert found is not None and found[0].repo == "42" and found[0].number == 5
    assert found[1].base == "c" * 40
    assert request_ref(_settings(target="auto"), {}) is None
    assert request_ref(_settings(), github) is None  # off by default


def test_flags_name_another_request_and_then_the_event_shas_do_not_apply(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"workflow_run": {"head_sha": "x" * 40}}))  # no pull_request
    env = {"GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "acme/app"}
    found = request_ref(_settings(target="github", pull_request=9), env)
    assert found is not None and found[0].number == 9 and found[1].head is None
    assert found[0].api_url == "https://api.github.com"


@pytest.mark.parametrize(
    ("settings", "env", "message"),
    [
        ({"target": "github"}, {"GITHUB_REPOSITORY": "a/b"}, "--pull-request N"),
        ({"target": "github", "pull_request": 3}, {}, "--platform-repo OWNER/NAME"),
        ({"target": "gitlab", "repo": "g/p"}, {}, "--pull-request IID"),
        ({"target": "github"}, {"GITHUB_EVENT_PATH": "/nonexistent/e.json"}, "GITHUB_EVENT_PATH"),
    ],
)
def test_what_is_missing_is_named(
    settings: dict[str, object], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("-", r"\-")):
        request_ref(_settings(**settings), env)


def test_tokens_come_from_the_environment_reviewflow_names_first() -> None:
    env = {"GITHUB_TOKEN": "ghs_ci", "REVIEWFLOW_GITHUB_TOKEN": "ghp_own"}
    assert token_from_env("github", env).get_secret_value() == "ghp_own"
    assert token_from_env("gitlab", {"GITLAB_TOKEN": " glpat-x \n"}).get_secret_value() == "glpat-x"
    with pytest.raises(PublishSetupError, match="set REVIEWFLOW_GITLAB_TOKEN or GITLAB_TOKEN"):
        token_from_env("gitlab", {"GITHUB_TOKEN": "x"})
    with pytest.raises(ReviewError) as caught:
        token_from_env("github", {"GITHUB_TOKEN": "ghp secret"})
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"repo": "not a repo"}, "repo"),
        ({"pull_request": 0}, "pull_request"),
        ({"api_url": "ftp://x"}, "api_url"),
    ],
)
def test_bad_settings_are_refused(values: dict[str, object], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        _settings(**values)


@pytest.mark.parametrize(
    ("target", "repo", "form"),
    [
        ("github", "a/b/c", "a GitHub repository is OWNER/NAME"),
        ("gitea", "a b/c", "a Gitea repository is OWNER/NAME"),
        ("gitea", "a/..", "a Gitea repository is OWNER/NAME"),
        ("bitbucket", "~a/b/c", "a Bitbucket repository is WORKSPACE/REPO_SLUG"),
        ("azure", "p/.", "an Azure DevOps repository is PROJECT/REPOSITORY"),
    ],
)
def test_a_repository_not_in_its_platform_s_form_is_one_line_naming_it(
    target: str, repo: str, form: str
) -> None:
    settings = {"target": target, "repo": repo, "pull_request": 1, "api_url": "https://h.example"}
    with pytest.raises(ConfigError, match=f"--platform-repo {repo!r}: {form}"):
        request_ref(PublishSettings.model_validate(settings), {})
    for good in ("acme/app", "~jo/app") if target == "bitbucket" else ("acme/app",):
        assert request_ref(PublishSettings.model_validate({**settings, "repo": good}), {})
