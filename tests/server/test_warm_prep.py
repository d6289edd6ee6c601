"""What the warm process builds once for its review children (`flows.local.warm.prep`)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

import reviewflow
from flows.local.warm import prep as warm_prep
from flows.local.warm.launch import warm_env
from flows.local.warm.prep import (
    DEFERRED_MODELS,
    adopt_settings,
    deferred_models,
    prepare_run,
    settings_inputs,
)
from flows.review_flow import review_flow, threaded_review
from reviewflow.config import Config
from reviewflow.prompts import _environment, preload_templates
from reviewflow.providers import anthropic, gemini, openai  # noqa: F401 - their SDKs' models


def test_settings_inputs_are_the_prefect_variables_and_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    inputs = settings_inputs()
    assert inputs is not None
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "another")  # not Prefect's
    assert settings_inputs() == inputs
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")
    assert settings_inputs() != inputs
    monkeypatch.setenv("prefect_logging_level", "DEBUG")  # Prefect reads them in any case
    assert settings_inputs() != inputs


@pytest.mark.parametrize(
    ("name", "text", "read_again"),
    [
        (".env", "PREFECT_API_URL=http://127.0.0.1:9/api\n", True),
        (".env", "DATABASE_URL=postgres://db\n", False),
        ("prefect.toml", "[logging]\nlevel = 'DEBUG'\n", True),
        ("pyproject.toml", "[tool.prefect.logging]\nlevel = 'DEBUG'\n", True),
        ("pyproject.toml", "[tool.ruff]\nline-length = 100\n", False),
        ("pyproject.toml", "[tool.ruff\n", True),  # not TOML: Prefect decides what it means
        ("pyproject.toml", "tool = 1\n", True),
    ],
)
def test_a_working_directory_file_prefect_reads_means_reading_the_settings_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, text: str, read_again: bool
) -> None:
    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert (settings_inputs() is None) is read_again


def test_a_review_child_reads_the_settings_again_only_when_their_inputs_differ(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(warm_prep, "refresh_global_settings_context", lambda: calls.append("s"))
    monkeypatch.setattr(warm_prep, "setup_logging", lambda incremental: calls.append("l"))
    monkeypatch.chdir(tmp_path)
    inputs = settings_inputs()
    adopt_settings(inputs)
    assert calls == []
    monkeypatch.setenv("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "INFO")  # e.g. --verbose
    adopt_settings(inputs)
    assert calls == ["s", "l"]
    adopt_settings(None)  # the warm process's cwd had a prefect.toml
    assert calls == ["s", "l"] * 2


def test_the_warm_process_has_the_clis_prefect_variables_but_no_secret(tmp_path: Path) -> None:
    cli = {
        "PATH": "/usr/bin",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
        "PREFECT_API_KEY": "pnu_secret",
        "PREFECT_API_AUTH_STRING": "admin:pass",
        "REVIEWFLOW_MODEL_API_KEY": "sk-secret",
        "EDITOR": "vi",
    }
    env = warm_env(cli, tmp_path, "http://127.0.0.1:4200/api")
    assert env["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] == "CRITICAL"
    assert env["PREFECT_API_URL"] == "http://127.0.0.1:4200/api"
    assert env["PREFECT_HOME"] == str(tmp_path)
    assert env["DO_NOT_TRACK"] == "1"
    assert "secret" not in str(env) and "pass" not in str(env)
    assert "EDITOR" not in env


def test_preloaded_templates_are_not_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(reviewflow.__file__).parent
    preload_templates(root)

    def unread(*args: object) -> None:
        raise AssertionError("a template file read after preloading")

    monkeypatch.setattr(jinja2.FileSystemLoader, "get_source", unread)
    names = [(path.parent, path.name) for path in root.rglob("*.j2")]
    assert len(names) > 10
    for folder, name in names:
        assert _environment(str(folder)).get_template(name).name == name


def test_the_deferred_models_a_review_builds_are_built_beforehand() -> None:
    prepare_run(None, [])
    models = deferred_models()
    assert len(models) == sum(map(len, DEFERRED_MODELS.values()))  # still the SDKs' names
    assert all(cls.__pydantic_complete__ for cls in models)


def test_the_review_flow_is_built_once_per_thread_pool_size() -> None:
    four = Config.model_validate({"review": {"concurrency": 4}})
    assert review_flow(four) is review_flow(four) is threaded_review(4)
    assert review_flow(
        Config.model_validate({"review": {"concurrency": 2}})
    ) is not threaded_review(4)
    dask = Config.model_validate({"review": {"task_runner": "dask"}})
    assert review_flow(dask) is not review_flow(dask)
    from prefect_dask import DaskTaskRunner  # the review's runner is one (stopping on a cancel)

    assert isinstance(review_flow(dask).task_runner, DaskTaskRunner)
