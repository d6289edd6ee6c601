"""`reviewflow` entry point. Prefect is imported only when a real review starts."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from flows import deployment_run, warm
from flows.cli_parser import build_parser, missing_action
from flows.failures import (
    STARTUP_TIMEOUT_DEFAULT,
    STARTUP_TIMEOUT_VAR,
    describe_failure,
    log_to_file,
    record_traceback,
    run_log_path,
)
from flows.local_server import QUIET_LOGS, TELEMETRY_OFF, ApiTarget, ensure_api, run_with_server
from reviewflow.config import (
    KEY_ENV_VARS,
    Config,
    OutputSettings,
    TaskRunner,
    config_as_dict,
    config_path,
    get_value,
    home_dir,
    load_config,
    report_off,
    set_value,
)
from reviewflow.errors import ConfigError, ReviewError
from reviewflow.fsutil import check_output, write_output
from reviewflow.request import ReviewRequest

_FLAG_KEYS: dict[str, tuple[str, str]] = {
    "concurrency": ("review", "concurrency"),
    "context_lines": ("review", "context_lines"),
    "max_tool_rounds": ("review", "max_tool_rounds"),
    "max_context_tool_calls": ("review", "max_context_tool_calls"),
    "max_chunk_tokens": ("review", "max_chunk_tokens"),
    "confidence_threshold": ("review", "confidence_threshold"),
    "max_file_bytes": ("review", "max_file_bytes"),
    "fail_on": ("review", "fail_on"),
    "task_runner": ("review", "task_runner"),
    "dask_address": ("review", "dask_address"),
    "protocol": ("model", "protocol"),
    "model_name": ("model", "name"),
    "endpoint": ("model", "endpoint"),
    "timeout": ("model", "timeout"),
    "json_path": ("output", "json"),
    "markdown": ("output", "markdown"),
    "sarif": ("output", "sarif"),
    "gitlab": ("output", "gitlab"),
    "console": ("output", "console"),
    "language": ("output", "language"),
    "report_dir": ("output", "report_dir"),
}


def flag_overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Config overrides from review flags, in the config file's shape."""
    out: dict[str, dict[str, Any]] = {}
    for attr, (section, key) in _FLAG_KEYS.items():
        value = getattr(args, attr, None)
        if value is not None:
            out.setdefault(section, {})[key] = value
    if getattr(args, "no_progress", False):
        out.setdefault("output", {})["progress"] = False
    return out


def request_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> ReviewRequest:
    from reviewflow.ci import ci_variables

    return ReviewRequest.from_flags(
        str(Path(args.repo).resolve()),
        commit=args.commit,
        from_ref=args.from_ref,
        to_ref=args.to_ref,
        diff_source=args.diff_source,
        custom_rule=str(Path(args.custom_rule).resolve()) if args.custom_rule else None,
        trusted_ref=args.trusted_ref,
        no_cache=args.no_cache,
        home=str(home_dir(env)),
        ci_variables=ci_variables(env),
    )


def cmd_review(args: argparse.Namespace, env: Mapping[str, str], log: Path) -> int:
    request = request_from_args(args, env)
    config = load_config(home_dir(env), env, flag_overrides(args))
    if args.preview:
        return run_preview(request, config, args.json_path)
    # The managed server in reuse mode: a warm process may run the review (no Prefect import).
    warm_ok = uses_warm(args, config, request, env) and not warm.FORKED
    if warm_ok and (code := warm.hand_over(Path(request.home), args.argv)) is not None:
        return code
    from reviewflow.providers.factory import check_settings
    from reviewflow.select.scope import collect, select

    check_settings(config.model)  # a placeholder model or a missing key fails before Prefect
    check_outputs(config.output, home_dir(env))
    with stdin_saved(request) as effective:
        # Bad input (repository, refs, diff, rules, trust) fails here with one line, before
        # Prefect starts its API; the flow's own tasks then repeat this cheap front half.
        scope = select(
            collect(effective, config.review.context_lines), effective, config.review.max_file_bytes
        )
        prepare_prefect_env(verbose=args.verbose)
        with local_api(args, config, request) as target:
            from flows.review import run_review  # imported by `local_api`, during the boot

            warm.adopt_environment()  # a forked review: Prefect settings for this environment
            log_to_file("prefect", log)
            code = run_with_server(target, lambda: run_review(effective, config, scope, env))
            if warm_ok and target.state is not None:
                warm.start_warm(Path(request.home), os.environ, target.state)  # for the next review
            return code


def uses_warm(
    args: argparse.Namespace, config: Config, request: ReviewRequest, env: Mapping[str, str]
) -> bool:
    """True when this review uses the managed server in reuse mode (a warm process's case)."""
    return not (
        env.get("PREFECT_API_URL")
        or request.ci_variables
        or args.no_server_reuse
        or not config.prefect.server_reuse
    )


def local_api(args: argparse.Namespace, config: Config, request: ReviewRequest) -> ApiTarget:
    """The Prefect API this review talks to: `PREFECT_API_URL` when set, else the managed local
    server (started if needed; importing Prefect overlaps its boot)."""

    def preload(prefect_env: Mapping[str, str]) -> None:
        os.environ.update(prefect_env)
        from flows.warm_prep import prepare_run  # imports Prefect (~3 s here) and flows.review

        threaded = config.review.task_runner is TaskRunner.THREAD
        prepare_run(config.review.concurrency if threaded else None, [config.model.protocol.value])

    return ensure_api(
        Path(request.home),
        os.environ,
        ci=bool(request.ci_variables),
        reuse=config.prefect.server_reuse and not args.no_server_reuse,
        idle_minutes=config.prefect.server_idle_minutes,
        verbose=args.verbose,
        preload=preload,
    )


def check_outputs(output: OutputSettings, home: Path) -> None:
    """Report paths that cannot be written fail now, not after the model has been paid."""
    if len(output.to_stdout) > 1:
        both = " and ".join(output.to_stdout)
        raise ConfigError(f"the {both} reports go to stdout ('-'): at most one report can")
    directory = Path(output.report_dir).expanduser() if output.report_dir else home / "reports"
    check_output(directory, directory=True)
    for setting in output.reports.values():
        if setting and Path(setting).expanduser().is_absolute():  # relative: the review's own dir
            check_output(setting)


def prepare_prefect_env(*, verbose: bool) -> None:
    """Prefect's environment, set before it is imported: quiet, patient, and without keys."""
    os.environ.update(TELEMETRY_OFF)  # Prefect must never phone home from this tool
    os.environ.setdefault(STARTUP_TIMEOUT_VAR, STARTUP_TIMEOUT_DEFAULT)
    if not verbose:  # Prefect's records (tracebacks included) go to the log file instead
        os.environ.update(QUIET_LOGS)
    # The key now lives in `config`; Prefect's API server (a child process) and anything
    # else started from here must not inherit it.
    for name in KEY_ENV_VARS:
        os.environ.pop(name, None)


@contextlib.contextmanager
def stdin_saved(request: ReviewRequest) -> Iterator[ReviewRequest]:
    """A diff on stdin, saved to a private temporary file that the flow's tasks can read."""
    if request.diff_source != "-":
        yield request
        return
    with tempfile.TemporaryDirectory(prefix="reviewflow-diff-") as tmpdir:
        path = Path(tmpdir) / "stdin.diff"
        with open(path, "wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        yield request.model_copy(update={"stdin_copy": str(path)})


def run_preview(
    request: ReviewRequest,
    config: Config,
    json_path: str | None,
) -> int:
    """Diff, filter and rules only: no provider, no Prefect."""
    from reviewflow.report.preview import preview_document, render_preview
    from reviewflow.select.scope import collect, select

    stdin = sys.stdin.buffer if request.diff_source == "-" else None
    change = collect(request, config.review.context_lines, stdin)
    scope = select(change, request, config.review.max_file_bytes)
    doc = preview_document(scope, request)
    if json_path and not report_off(json_path):
        write_output(json_path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    (sys.stderr if json_path == "-" else sys.stdout).write(render_preview(doc))  # stdout: JSON
    return 0


def cmd_rules_check(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from reviewflow.report.rulecheck import check_path, render_check

    result = check_path(Path(args.repo), args.path, args.custom_rule, home_dir(env), env)
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_check(result))
    return 0


def cmd_config(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    home = home_dir(env)
    action = args.config_action
    if action == "path":
        sys.stdout.write(f"{config_path(home)}\n")
        return 0
    if action == "set":
        path = set_value(home, args.key, args.value)
        sys.stdout.write(f"set {args.key} in {path}\n")
        return 0
    config = load_config(home, env)
    if action == "show":
        import yaml

        sys.stdout.write(yaml.safe_dump(config_as_dict(config), sort_keys=False))
        return 0
    if action == "get":
        sys.stdout.write(config_text(get_value(config, args.key)) + "\n")
        return 0
    return _config_test(config)


def config_text(value: Any) -> str:
    """A value as `config get` prints it: as `config set` takes it (true, a,b, empty for null)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(value) if isinstance(value, list) else str(value)


def _config_test(config: Config) -> int:
    from reviewflow.providers.doctor import check_model

    report = check_model(config)
    sys.stdout.write(report.render() + "\n")
    return report.exit_code


def cmd_schema() -> int:
    from reviewflow.report.outcome import report_schema

    sys.stdout.write(json.dumps(report_schema(), indent=2) + "\n")
    return 0


def cmd_server(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from flows.local_server import server_status, stop_server

    if args.server_action == "status":
        sys.stdout.write(server_status(home_dir(env)).render())
        return 0
    stopped = stop_server(home_dir(env))
    sys.stdout.write(f"stopped (pid {stopped.pid})\n" if stopped else "not running\n")
    return 0


def cmd_version() -> int:
    from reviewflow.version import version_info

    info = version_info()
    sys.stdout.write(
        f"reviewflow {info['version']} (commit {info['commit']}, build time {info['build_time']})\n"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors become one line on stderr and an exit code (never 1)."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what a warm process is given
    if missing_action(args):  # `reviewflow`, `reviewflow config`: the help, and exit 2
        args.help_parser.print_help()
        return 2
    env = dict(os.environ)
    log = run_log_path(home_dir(env))
    try:
        return _dispatch(args, env, log)
    except ReviewError as exc:
        sys.stderr.write(f"reviewflow: error: {_one_line(str(exc))}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("reviewflow: cancelled\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last resort: exit 2 and one line, never 1
        return _unexpected(exc, log, verbose=getattr(args, "verbose", False))


def _dispatch(args: argparse.Namespace, env: Mapping[str, str], log: Path) -> int:
    if args.command == "review":
        return cmd_review(args, env, log)
    if args.command == "rules":
        return cmd_rules_check(args, env)
    if args.command == "config":
        return cmd_config(args, env)
    if args.command == "schema":
        return cmd_schema()
    if args.command == "server":
        return cmd_server(args, env)
    if args.command == "deployment-run":
        return deployment_run.cmd_deployment_run(args)
    return cmd_version()


def _unexpected(exc: Exception, log: Path, *, verbose: bool) -> int:
    """An environment failure or a bug: the traceback to the log (and stderr if verbose)."""
    details = record_traceback(exc, log)
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.write(f"reviewflow: error: {describe_failure(exc, os.environ, details)}\n")
    return 2


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "unknown error"


if __name__ == "__main__":
    raise SystemExit(main())
