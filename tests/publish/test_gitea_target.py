"""Gitea and Forgejo Actions: `--publish auto` picks Gitea there (they set GITHUB_ACTIONS too),
the request comes from the GitHub-compatible event, the API from the job's URLs or the flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewflow.ci import ci_variables
from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError, PublishSetupError
from reviewflow.publish.target import platform_of, request_ref, token_from_env


def _settings(**values: object) -> PublishSettings:
    return PublishSettings.model_validate(values)


def _actions(tmp_path: Path, marker: str, **extra: str) -> dict[str, str]:
    event = tmp_path / "event.json"
    pull = {"number": 12, "base": {"sha": "b" * 40}, "head": {"sha": "h" * 40}}
    event.write_text(json.dumps({"action": "opened", "number": 12, "pull_request": pull}))
    return {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        marker: "true",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_SERVER_URL": "https://code.example.com",
        **extra,
    }


@pytest.mark.parametrize("marker", ["GITEA_ACTIONS", "FORGEJO_ACTIONS"])
def test_auto_is_gitea_in_gitea_and_forgejo_actions(tmp_path: Path, marker: str) -> None:
    env = _actions(tmp_path, marker, GITHUB_API_URL="https://code.example.com/api/v1")
    assert platform_of(_settings(target="auto"), env) == "gitea"
    found = request_ref(_settings(target="auto"), env)
    assert found is not None
    ref, shas = found
    assert (ref.platform, ref.repo, ref.number, ref.api_url) == (
        "gitea",
        "acme/app",
        12,
        "https://code.example.com/api/v1",
    )
    assert (shas.base, shas.head) == ("b" * 40, "h" * 40)
    del env[marker]
    assert platform_of(_settings(target="auto"), env) == "github"  # GitHub Actions itself


def test_the_api_is_the_server_url_and_api_v1_unless_a_flag_names_it(tmp_path: Path) -> None:
    env = _actions(tmp_path, "GITEA_ACTIONS", GITHUB_API_URL="https://code.example.com/api/v3")
    found = request_ref(_settings(target="gitea"), env)
    assert found is not None and found[0].api_url == "https://code.example.com/api/v1"
    flagged = _settings(target="gitea", api_url="https://git.example.org/sub/api/v1")
    found = request_ref(flagged, env)
    assert found is not None and found[0].api_url == "https://git.example.org/sub/api/v1"
    for server in ("https://git.example.org/sub", "https://git.example.org/sub/"):
        found = request_ref(
            _settings(target="gitea", api_url=server, repo="a/b", pull_request=1), {}
        )
        assert found is not None and found[0].api_url == "https://git.example.org/sub/api/v1"


def test_flags_outside_actions_and_another_request_drops_the_event_shas(tmp_path: Path) -> None:
    settings = _settings(
        target="gitea", repo="acme/app", pull_request=3, api_url="https://g.example.com/api/v1"
    )
    found = request_ref(settings, {})
    assert found is not None and (found[0].repo, found[0].number) == ("acme/app", 3)
    found = request_ref(
        settings.model_copy(update={"pull_request": 9}), _actions(tmp_path, "GITEA_ACTIONS")
    )
    assert found is not None and found[0].number == 9 and found[1].head is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"target": "gitea"}, "--platform-repo OWNER/NAME"),
        ({"target": "gitea", "repo": "a/b"}, "--pull-request N"),
        ({"target": "gitea", "repo": "a/b", "pull_request": 2}, "--api-url"),
    ],
)
def test_what_is_missing_is_named(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("-", r"\-")):
        request_ref(_settings(**settings), {})


def test_tokens_and_ci_detection() -> None:
    env = {"GITEA_TOKEN": "job-token", "REVIEWFLOW_GITEA_TOKEN": "own-token"}
    assert token_from_env("gitea", env).get_secret_value() == "own-token"
    with pytest.raises(PublishSetupError, match="set REVIEWFLOW_GITEA_TOKEN or GITEA_TOKEN"):
        token_from_env("gitea", {"GITHUB_TOKEN": "x"})
    assert ci_variables({"GITEA_ACTIONS": "true"}) == ("GITEA_ACTIONS",)
