"""Config: defaults, file, environment and flags; show/get/set/path; bad values."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config import (
    PLACEHOLDER_MODEL,
    Config,
    get_value,
    load_config,
    parse_duration,
    set_value,
)
from reviewflow.errors import ConfigError
from tests.gitutil import GitRepo


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(text)


def test_defaults_match_the_spec(rf_home: Path) -> None:
    config = load_config(rf_home, {})
    assert config.review.concurrency == 4
    assert config.review.context_lines == 3
    assert config.review.max_tool_rounds == 30
    assert config.review.max_context_tool_calls == 10
    assert config.review.max_chunk_tokens == 12000
    assert config.review.confidence_threshold == 0.75
    assert [s.value for s in config.review.fail_on] == ["critical", "high"]
    assert config.model.protocol == "openai"
    assert config.model.name == PLACEHOLDER_MODEL
    assert config.model.effective_endpoint == "https://api.openai.com/v1"
    assert config.model.timeout == 120.0
    assert config.output.json_path == "review-report.json"
    assert config.output.markdown == "review-report.md"
    assert config.output.sarif == "review-report.sarif"
    assert config.output.console.value == "detailed"
    assert config.output.language == "en-US"
    assert config.output.progress is True


def test_precedence_defaults_file_env_flags(rf_home: Path) -> None:
    write_config(rf_home, "model:\n  name: from-file\n  timeout: 30s\nreview:\n  concurrency: 2\n")
    env = {"REVIEWFLOW_MODEL_NAME": "from-env"}
    config = load_config(rf_home, env)
    assert (config.model.name, config.model.timeout, config.review.concurrency) == (
        "from-env",
        30.0,
        2,
    )
    flags = {"model": {"name": "from-flag"}, "review": {"concurrency": 8}}
    config = load_config(rf_home, env, flags)
    assert (config.model.name, config.review.concurrency) == ("from-flag", 8)


def test_api_key_sources(rf_home: Path) -> None:
    assert load_config(rf_home, {"OPENAI_API_KEY": "sk-fallback"}).model.api_key is not None
    write_config(rf_home, "model:\n  api_key: sk-file\n")
    config = load_config(rf_home, {"OPENAI_API_KEY": "sk-fallback"})
    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == "sk-file"
    config = load_config(rf_home, {"REVIEWFLOW_MODEL_API_KEY": "sk-env"})
    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == "sk-env"
    write_config(rf_home, "")
    gemini = load_config(rf_home, {"REVIEWFLOW_MODEL_PROTOCOL": "gemini", "GOOGLE_API_KEY": "g"})
    assert gemini.model.api_key is not None
    assert gemini.model.api_key.get_secret_value() == "g"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("120s", 120.0), ("2m", 120.0), ("1m30s", 90.0), ("500ms", 0.5), ("45", 45.0), (3, 3.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "abc", "10x", "-5s", "0s", True])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_set_validates_and_writes_0600(rf_home: Path) -> None:
    path = set_value(rf_home, "review.fail_on", "critical,high,medium")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    set_value(rf_home, "model.timeout", "90s")
    set_value(rf_home, "model.name", "gpt-4o")
    set_value(rf_home, "output.progress", "false")
    config = load_config(rf_home, {})
    assert [s.value for s in config.review.fail_on] == ["critical", "high", "medium"]
    assert config.model.timeout == 90.0
    assert config.model.name == "gpt-4o"
    assert config.output.progress is False
    assert not list(rf_home.glob(".config.yaml.*")), "no temporary file left behind"


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("review.nope", "1", "unknown config key 'review.nope'"),
        ("review.concurrency", "many", "review.concurrency"),
        ("review.concurrency", "0", "review.concurrency"),
        ("review.fail_on", "urgent", "review.fail_on"),
        ("model.protocol", "grpc", "model.protocol"),
        ("model.timeout", "soon", "model.timeout"),
        ("model.endpoint", "ftp://x", "model.endpoint"),
        ("output.console", "loud", "output.console"),
    ],
)
def test_set_rejects_bad_values(rf_home: Path, key: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        set_value(rf_home, key, value)
    assert not (rf_home / "config.yaml").exists()


def test_get_returns_key_in_clear(rf_home: Path) -> None:
    write_config(rf_home, "model:\n  api_key: sk-secret-value-123\n")
    assert get_value(load_config(rf_home, {}), "model.api_key") == "sk-secret-value-123"


def test_cli_show_redacts_and_get_reveals(
    rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(rf_home, "model:\n  api_key: sk-secret-value-123\n")
    assert main(["config", "show"]) == 0
    shown = capsys.readouterr().out
    assert "sk-secret-value-123" not in shown and "value-123" not in shown
    assert "api_key: '********'" in shown
    assert main(["config", "get", "model.api_key"]) == 0
    assert capsys.readouterr().out == "sk-secret-value-123\n"
    assert main(["config", "get", "review.fail_on"]) == 0
    assert capsys.readouterr().out == "critical,high\n"
    assert main(["config", "get", "prefect.server_reuse"]) == 0  # as `config set` takes it
    assert capsys.readouterr().out == "true\n"
    assert main(["config", "get", "output.gitlab"]) == 0
    assert capsys.readouterr().out == "\n"
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out == f"{rf_home / 'config.yaml'}\n"


def test_cli_set_and_errors(rf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "set", "review.concurrency", "6"]) == 0
    assert load_config(rf_home, {}).review.concurrency == 6
    capsys.readouterr()
    assert main(["config", "set", "review.concurrency", "six"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "review.concurrency" in err
    assert main(["config", "get", "model.colour"]) == 2
    assert "unknown config key 'model.colour'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("review: [unclosed\n", "invalid YAML"),
        ("review:\n  concurency: 3\n", "unknown config key 'review.concurency'"),
        ("colour: blue\n", "unknown config key 'colour'"),
        ("- a list\n", "must be a mapping"),
    ],
)
def test_bad_config_file(
    rf_home: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    write_config(rf_home, text)
    assert main(["config", "get", "model.name"]) == 2  # `config show` shows what it can
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1


def test_config_model_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError):
        Config.model_validate({"review": {"surprise": 1}})


def test_version_names_version_commit_and_build_time(capsys: pytest.CaptureFixture[str]) -> None:
    from reviewflow import __version__

    assert main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"reviewflow {__version__} (commit ")
    assert "build time " in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["review"],
        ["rules"],
        ["rules", "check"],
        ["config"],
        *(["config", action] for action in ("show", "get", "set", "path", "test")),
        ["version"],
    ],
)
def test_every_command_has_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: reviewflow {' '.join(argv)}".rstrip())
    description = out.split("\n\n")[1]
    assert len(description) > 20 and not description.startswith(("positional", "options"))
    assert re.search(r"^(examples?|modes):$", out, re.MULTILINE), out
    assert " reviewflow " in out.split("options:")[-1]


@pytest.mark.parametrize("argv", [[], ["config"], ["rules"]])
def test_a_missing_command_shows_its_help(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"usage: reviewflow {' '.join(argv)}".rstrip())
    assert "example" in out


def test_set_takes_text_values_as_typed(rf_home: Path) -> None:
    set_value(rf_home, "model.api_key", "@SECRET-KEY-9f8e7d")
    set_value(rf_home, "model.name", "- [x")
    config = load_config(rf_home, {})
    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == "@SECRET-KEY-9f8e7d"
    assert config.model.name == "- [x"
    set_value(rf_home, "output.sarif", "")
    assert load_config(rf_home, {}).output.sarif is None


def test_set_with_unparsable_value_is_one_line(
    rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "set", "review.fail_on", "[critical"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "review.fail_on" in err and "[critical" not in err


@pytest.mark.parametrize("raw", ["sk-secret-123\n", "  sk-secret-123\r\n", "\tsk-secret-123 "])
def test_pasted_whitespace_around_the_key_is_stripped(rf_home: Path, raw: str) -> None:
    config = load_config(rf_home, {"REVIEWFLOW_MODEL_API_KEY": raw})
    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == "sk-secret-123"


def test_control_characters_in_the_key_are_refused_without_echo(rf_home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(rf_home, {"REVIEWFLOW_MODEL_API_KEY": "sk-sec\x00ret-123"})
    assert "printable ASCII" in str(info.value)
    assert "ret-123" not in str(info.value)


@pytest.mark.parametrize("value", [".inf", ".nan", "1e9", "-1"])
def test_timeout_must_be_finite_and_sane(rf_home: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"model\.timeout"):
        set_value(rf_home, "model.timeout", value)
    write_config(rf_home, f"model:\n  timeout: {value}\n")
    with pytest.raises(ConfigError, match=r"model\.timeout"):
        load_config(rf_home, {})


def test_non_utf8_config_is_one_line(rf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (rf_home / "config.yaml").write_bytes(b"review:\n  context_lines: 3 # caf\xe9\n")
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not UTF-8" in err


def test_a_file_key_is_only_used_for_the_file_protocol(rf_home: Path) -> None:
    write_config(rf_home, "model:\n  protocol: openai\n  api_key: sk-openai-file-key\n")
    env = {"REVIEWFLOW_MODEL_PROTOCOL": "anthropic", "ANTHROPIC_API_KEY": "sk-ant-env-key"}
    config = load_config(rf_home, env)
    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == "sk-ant-env-key"
    flags = {"model": {"protocol": "gemini"}}
    assert load_config(rf_home, {}, flags).model.api_key is None
    same = load_config(rf_home, {"OPENAI_API_KEY": "sk-other"})
    assert same.model.api_key is not None
    assert same.model.api_key.get_secret_value() == "sk-openai-file-key"
    generic = load_config(rf_home, {**env, "REVIEWFLOW_MODEL_API_KEY": "sk-generic"})
    assert generic.model.api_key is not None
    assert generic.model.api_key.get_secret_value() == "sk-generic"


@pytest.mark.parametrize("key", ["sk-abc\u200bdef12345", "sk-live\xa0KEY", "sk-Éclair-1", "a b"])
def test_keys_must_be_printable_ascii(rf_home: Path, key: str) -> None:
    with pytest.raises(ConfigError, match="printable ASCII") as info:
        set_value(rf_home, "model.api_key", key)
    assert key not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/v1",
        "http://a_b..c/v1",
        "https://user:secret@example.com/v1",
        "http://host:99999/v1",
        "ftp://example.com",
        "https:///v1",
        "http://exa mple.com",
    ],
)
def test_bad_endpoints(rf_home: Path, url: str) -> None:
    with pytest.raises(ConfigError, match=r"model\.endpoint"):
        set_value(rf_home, "model.endpoint", url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434/v1",
        "http://[::1]:8080/v1",
        "https://openrouter.ai/api/v1",
        "http://ollama_host:11434/v1",
        "https://bücher.example/v1",
    ],
)
def test_good_endpoints(rf_home: Path, url: str) -> None:
    set_value(rf_home, "model.endpoint", url)
    assert load_config(rf_home, {}).model.endpoint == url


def test_managed_server_settings(rf_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "set", "prefect.server_idle_minutes", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "reviewflow: error: invalid value for 'prefect.server_idle_minutes': 0 "
        "(accepted: minutes, more than 0 and at most 1440 (one day))\n"
    )
    assert main(["config", "set", "prefect.server_idle_minutes", "2.5"]) == 0
    assert main(["config", "set", "prefect.server_reuse", "false"]) == 0
    capsys.readouterr()
    config = load_config(rf_home, {})
    assert (config.prefect.server_idle_minutes, config.prefect.server_reuse) == (2.5, False)


def test_off_turns_a_report_off_in_the_file_set_and_flags(
    rf_home: Path, repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(rf_home, "output:\n  json: off\n  markdown: 'off'\n  sarif: ./off\n")
    output = load_config(rf_home, {}).output
    assert (output.json_path, output.markdown, output.sarif) == (None, None, "./off")
    set_value(rf_home, "output.gitlab", "off")
    assert load_config(rf_home, {}).output.gitlab is None
    flags = load_config(rf_home, {}, {"output": {"json": "off", "sarif": "off"}}).output
    assert flags.json_path is None and flags.sarif is None
    repo.write("a.py", "x = 1\n")
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)  # the preview writes a relative --json here
    assert main(["review", "--preview", "--repo", str(repo.root), "--json", "off"]) == 0
    assert list(here.iterdir()) == []


def test_yaml_reads_only_true_and_false_as_booleans(rf_home: Path) -> None:
    """`console: off` and `language: no` (Norwegian) are text, as the settings mean them;
    a boolean setting still takes off/no/on/yes."""
    write_config(
        rf_home,
        "output:\n  console: off\n  language: no\n  progress: off\nprefect:\n  server_reuse: No\n",
    )
    config = load_config(rf_home, {})
    assert config.output.console.value == "off" and config.output.language == "no"
    assert config.output.progress is False and config.prefect.server_reuse is False
    set_value(rf_home, "output.console", "summary")
    set_value(rf_home, "output.console", "off")
    set_value(rf_home, "output.progress", "yes")
    config = load_config(rf_home, {})
    assert config.output.console.value == "off" and config.output.progress is True
    assert "progress: true\n" in (rf_home / "config.yaml").read_text()  # stored as validated


def test_two_reports_cannot_share_stdout(
    rf_home: Path, repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("a.py", "x = 1\n")
    argv = ["review", "--repo", str(repo.root), "--json", "-", "--sarif", "-"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REVIEWFLOW_MODEL_NAME", "some-model")
        env.setenv("REVIEWFLOW_MODEL_API_KEY", "k")
        assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "reviewflow: error: the json and sarif reports go to stdout ('-'): at most one report can"
    )


def test_set_refuses_a_report_file_that_is_a_folder_and_the_reverse(
    rf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["config", "set", "output.json", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"reviewflow: error: invalid value for 'output.json': {tmp_path} is a directory "
        "(accepted: a file path, - for stdout, or off)\n"
    )
    assert main(["config", "set", "output.report_dir", str(tmp_path / "file")]) == 2
    assert "is not a directory (accepted: a directory path)" in capsys.readouterr().err
    assert not (rf_home / "config.yaml").exists()
    assert main(["config", "set", "output.json", "review.json"]) == 0  # in each review's folder
    assert main(["config", "set", "output.report_dir", str(tmp_path)]) == 0


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "review:\n  fail_on: [critical, high\n",
            "at its end: expected ',' or ']', but got the end of the file "
            "(the [ list started on line 2)",
        ),
        ("review:\n  concurrency: 4\n\tx: 1\n", "line 3: found character '\\t' that cannot"),
        ("a: b: c\n", "line 1: mapping values are not allowed here"),
    ],
)
def test_invalid_yaml_says_where_and_why(
    rf_home: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    """A 2-line file's problem at its end is not 'line 3', and the reason is given."""
    write_config(rf_home, text)
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"reviewflow: error: invalid YAML in {rf_home / 'config.yaml'} {said}")
    assert err.count("\n") == 1
