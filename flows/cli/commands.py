"""The `reviewflow` commands other than `review`: rules, config, schema, server, version."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reviewflow.config import (
    config_path,
    get_value,
    home_dir,
    inspect_config,
    load_config,
    set_value,
)
from reviewflow.config.schema import Config
from reviewflow.config.show import render_config


def cmd_rules_check(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from reviewflow.report.rulecheck import check_path, render_check

    home = home_dir(env)
    instructions = args.instructions and str(Path(args.instructions).absolute())
    setting = instructions or load_config(home, env).review.instructions
    result = check_path(Path(args.repo), args.path, args.custom_rule, home, env, setting)
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
        done = "unset" if not args.value.strip() else "set"
        sys.stdout.write(f"{done} {args.key} in {path}\n")
        _problem_notes(inspect_config(home, env).problems)
        return 0
    if action == "show":
        inspection = inspect_config(home, env)
        sys.stdout.write(render_config(inspection))
        _problem_notes(inspection.problems)
        return 0
    config = load_config(home, env)
    if action == "get":
        sys.stdout.write(config_text(get_value(config, args.key)) + "\n")
        return 0
    return _config_test(config)


def _problem_notes(problems: Mapping[str, str]) -> None:
    """What a review would refuse in the settings, one line each (a conflict once)."""
    for problem in dict.fromkeys(problems.values()):
        sys.stderr.write(f"reviewflow: note: {problem}\n")


def config_text(value: Any) -> str:
    """A value as `config get` prints it: as `config set` takes it (true, a,b, empty for null)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(value) if isinstance(value, list) else str(value)


def _config_test(config: Config) -> int:
    from reviewflow.cost.text import price_lines
    from reviewflow.providers.doctor import check_model

    report = check_model(config)
    if report.ok:
        prices = "".join(f"  {line}\n" for line in price_lines(config))
        sys.stdout.write(report.render() + "\n" + prices)
    else:  # an exit 2 like every other: one line on stderr
        head, *rest = report.render().splitlines()
        detail = "; ".join(line.strip() for line in rest)
        sys.stderr.write(f"reviewflow: error: {head.removesuffix(': FAILED')}: {detail}\n")
    return report.exit_code


def cmd_schema() -> int:
    from reviewflow.report.outcome import report_schema

    sys.stdout.write(json.dumps(report_schema(), indent=2) + "\n")
    return 0


def cmd_server(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from flows.local.control import StopFailed, prepare_server, server_status, stop_server

    if args.server_action == "status":
        sys.stdout.write(server_status(home_dir(env)).render())
        return 0
    if args.server_action == "prepare":
        sys.stdout.write(prepare_server(home_dir(env), env).render())
        return 0
    try:
        stopped = stop_server(home_dir(env), force=args.force)
    except StopFailed as exc:  # what was stopped, then the one line on what was not
        sys.stdout.write("".join(f"{line}\n" for line in exc.stopped))
        raise
    sys.stdout.write("".join(f"{line}\n" for line in stopped) or "not running\n")
    return 0


def cmd_version() -> int:
    from reviewflow.version import version_info

    info = version_info()
    sys.stdout.write(
        f"reviewflow {info['version']} (commit {info['commit']}, build time {info['build_time']})\n"
    )
    return 0
