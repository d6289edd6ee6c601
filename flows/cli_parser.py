"""The `reviewflow` command line: argument definitions only (no Prefect import)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from reviewflow.config import ConsoleMode, Protocol

DESCRIPTION = "reviewflow: a read-only code review agent for Git changes."

REVIEW_EPILOG = """\
modes:
  reviewflow review                        workspace: staged + unstaged + untracked changes
  reviewflow review --commit SHA           the changes one commit introduced
  reviewflow review --from A --to B        merge-base(A, B)..B
  git diff | reviewflow review --diff -    a unified diff on stdin (tools read the working tree)
  reviewflow review --preview ...          files, filters and rules only; no model needed

exit codes: 0 nothing matches fail_on, 1 a finding matches fail_on,
            2 configuration/Git/provider error or incomplete review, 130 cancelled
"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _add_change_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("change to review")
    group.add_argument("--repo", default=".", help="repository to review (default: current dir)")
    group.add_argument("--commit", metavar="SHA", help="review the changes of one commit")
    group.add_argument("--from", dest="from_ref", metavar="REF", help="range start (with --to)")
    group.add_argument("--to", dest="to_ref", metavar="REF", help="range end (with --from)")
    group.add_argument(
        "--diff", dest="diff_source", metavar="FILE", help="review a unified diff ('-' = stdin)"
    )
    group.add_argument("--rule", dest="custom_rule", metavar="FILE", help="extra rules.json")
    group.add_argument(
        "--trusted-ref",
        metavar="REF",
        help="read the repository's own rules from this ref (required in CI without a range)",
    )
    group.add_argument(
        "--preview", action="store_true", help="show files, filters and rules; no model"
    )


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    review = parser.add_argument_group("review settings (override config)")
    review.add_argument("--concurrency", type=int, help="model requests in flight")
    review.add_argument("--context-lines", type=int, help="diff context lines (default 3)")
    review.add_argument("--max-tool-rounds", type=int, help="tool rounds per chunk")
    review.add_argument("--max-context-tool-calls", type=int, help="context tool calls per file")
    review.add_argument("--max-chunk-tokens", type=int, help="token budget per chunk")
    review.add_argument("--confidence-threshold", type=float, help="drop findings below this")
    review.add_argument("--fail-on", metavar="SEVERITIES", help="e.g. critical,high")
    review.add_argument("--no-cache", action="store_true", help="ignore cached model answers")
    model = parser.add_argument_group("model settings (the API key comes from config or env)")
    model.add_argument("--protocol", choices=[p.value for p in Protocol])
    model.add_argument("--model", dest="model_name", metavar="NAME", help="model name")
    model.add_argument("--endpoint", metavar="URL", help="API base URL")
    model.add_argument("--timeout", metavar="DURATION", help="per-request timeout, e.g. 120s")
    output = parser.add_argument_group("output")
    output.add_argument("--json", dest="json_path", metavar="PATH", help="JSON report path")
    output.add_argument("--markdown", metavar="PATH", help="Markdown report path")
    output.add_argument("--sarif", metavar="PATH", help="SARIF report path")
    output.add_argument("--console", choices=[c.value for c in ConsoleMode])
    output.add_argument("--language", metavar="LANG", help="report language, e.g. en-US")
    output.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    output.add_argument("--report-dir", metavar="DIR", help="directory for this review's reports")
    prefect = parser.add_argument_group("Prefect (local runs)")
    prefect.add_argument(
        "--no-server-reuse",
        action="store_true",
        help="stop the local Prefect server this run starts when it ends (always so in CI)",
    )
    prefect.add_argument("--verbose", action="store_true", help="show Prefect's own log lines")


def _add_config_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    config = sub.add_parser(
        "config",
        help="show or change ~/.reviewflow/config.yaml",
        description="Show or change the configuration (REVIEWFLOW_HOME moves the home).",
    )
    actions = config.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    actions.add_parser("show", help="effective configuration, API key redacted")
    get = actions.add_parser("get", help="one effective value (the API key in clear)")
    get.add_argument("key", help="dotted key, e.g. model.name")
    set_ = actions.add_parser("set", help="validate and store one value")
    set_.add_argument("key", help="dotted key, e.g. review.fail_on")
    set_.add_argument("value", help="new value, e.g. critical,high or 120s")
    actions.add_parser("path", help="path of the config file")
    actions.add_parser("test", help="send one tiny request with the effective model settings")


def _add_server_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    server = sub.add_parser(
        "server",
        help="show or stop the local Prefect server reviewflow manages",
        description="The local Prefect server reviews reuse (unless PREFECT_API_URL is set).",
    )
    actions = server.add_subparsers(dest="server_action", required=True, metavar="ACTION")
    actions.add_parser("status", help="whether it runs, its URL (open it for the Prefect UI)")
    actions.add_parser("stop", help="stop it now (the next review starts it again)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="reviewflow", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    review = sub.add_parser(
        "review",
        help="review a Git change",
        description="Review a Git change with a language model and deterministic validation.",
        epilog=REVIEW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_change_flags(review)
    _add_setting_flags(review)
    rules = sub.add_parser("rules", help="inspect rule resolution")
    rules_sub = rules.add_subparsers(dest="rules_action", required=True, metavar="ACTION")
    check = rules_sub.add_parser(
        "check",
        help="which rule applies to a path, and whether it is reviewed",
        description="Show the rule that applies to PATH and the filter's decision for it.",
    )
    check.add_argument("path", help="repository-relative path")
    check.add_argument("--rule", dest="custom_rule", metavar="FILE", help="extra rules.json")
    check.add_argument("--repo", default=".", help="repository (default: current dir)")
    check.add_argument("--json", action="store_true", help="print JSON")
    _add_config_commands(sub)
    _add_server_commands(sub)
    sub.add_parser("version", help="version, commit and build time")
    return parser
