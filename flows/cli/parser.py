"""The `reviewflow` command line: argument definitions only (no Prefect import)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, NoReturn

from flows.cli.argerrors import bad_value, unknown
from flows.cli.deployment_run import add_parser as add_deployment_run
from reviewflow.config import ConsoleMode, TaskRunner
from reviewflow.platforms import RESERVED, platform_names

DESCRIPTION = "reviewflow: a read-only code review agent for Git changes."

REVIEW_EPILOG = """\
modes:
  reviewflow review                        workspace: staged + unstaged + untracked changes
  reviewflow review --commit SHA           the changes one commit introduced
  reviewflow review --from A --to B        merge-base(A, B)..B
  git diff | reviewflow review --diff -    a unified diff on stdin (tools read the working tree)
  reviewflow review --files PATH... | --all   audit files as they are on disk, no diff
  reviewflow review --preview ...          files, filters and rules only; no model needed

exit codes: 0 nothing matches fail_on, 1 a finding matches fail_on,
            2 configuration/Git/provider error or incomplete review, 130 cancelled
"""


INSTRUCTIONS_HELP = (
    "team review instructions (Markdown, at most 16 KiB) for every file; in CI a file inside "
    "the repository is read at the trusted ref"
)


_FLAG_PARSER = "_flag_parser"  # the innermost parser of a command line, for unknown flags


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line in the documented style and exit 2.

    No abbreviations (`--forc` is not `--force`), in this parser and every sub-parser.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        kwargs["exit_on_error"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        try:
            parsed, extras = super().parse_known_args(args, namespace)
        except argparse.ArgumentError as err:
            self.error(bad_value(self, err))
        if not hasattr(parsed, _FLAG_PARSER):
            setattr(parsed, _FLAG_PARSER, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        innermost = getattr(parsed, _FLAG_PARSER)
        delattr(parsed, _FLAG_PARSER)
        if extras:
            self.error(unknown(innermost, extras))
        return parsed

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"reviewflow: error: {message}\n")
        raise SystemExit(2)


def _add_change_flags(parser: argparse.ArgumentParser, *, preview: bool = True) -> None:
    group = parser.add_argument_group("change to review")
    group.add_argument("--repo", default=".", help="repository to review (default: current dir)")
    group.add_argument("--commit", metavar="SHA", help="review the changes of one commit")
    group.add_argument("--from", dest="from_ref", metavar="REF", help="range start (with --to)")
    group.add_argument("--to", dest="to_ref", metavar="REF", help="range end (with --from)")
    group.add_argument(
        "--diff", dest="diff_source", metavar="FILE", help="review a unified diff ('-' = stdin)"
    )
    group.add_argument(
        "--files",
        nargs="+",
        metavar="PATH",
        help="audit these files or directories as they are, no diff (--commit: as it has them)",
    )
    group.add_argument(
        "--all",
        dest="audit_all",
        action="store_true",
        help="audit every file as it is, no diff (with --commit: that commit's tree)",
    )
    group.add_argument("--rule", dest="custom_rule", metavar="FILE", help="extra rules.json")
    group.add_argument("--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)
    group.add_argument(
        "--trusted-ref",
        metavar="REF",
        help="read the repository's own rules from this ref (required in CI without a range)",
    )
    if preview:
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
    review.add_argument(
        "--max-file-bytes", type=int, metavar="BYTES", help="larger files are left out (1 MiB)"
    )
    review.add_argument("--fail-on", metavar="SEVERITIES", help="e.g. critical,high")
    review.add_argument(
        "--max-tokens",
        metavar="N",
        help="token budget of the review, e.g. 200k: no request is sent that would cross it",
    )
    review.add_argument(
        "--max-cost",  # kept as typed: the config check reads it and echoes it unchanged
        metavar="AMOUNT",
        help="cost budget in the price's currency, e.g. 2.50 (needs a known model price)",
    )
    review.add_argument("--no-cache", action="store_true", help="ignore cached model answers")
    review.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        help="verify each finding (Chain-of-Verification)",
    )
    review.add_argument(
        "--verify-model",
        metavar="NAME",
        help="model that verifies (same protocol); implies --verify",
    )
    review.add_argument(
        "--passes",
        metavar="N",
        help="review every file N times independently (1-5); keep what --min-agreement found",
    )
    review.add_argument(
        "--min-agreement",
        metavar="K",
        help="passes that must find a finding to keep it (default: a majority of --passes)",
    )
    review.add_argument(
        "--task-runner", choices=[r.value for r in TaskRunner], help="where the stages run"
    )
    review.add_argument(
        "--dask-address", metavar="URL", help="Dask scheduler, e.g. tcp://HOST:8786 (dask runner)"
    )
    review.add_argument(
        "--shared-store",
        metavar="DIR",
        help="a directory the Dask workers reach too: the snapshot and stage results go there",
    )
    review.add_argument(
        "--context",
        choices=["on", "off"],
        help="the context pack (callers of changed code, definitions it uses) in the request",
    )
    review.add_argument(
        "--sast",
        action="store_true",
        default=None,
        help="semgrep pre-scan; its results on added lines are hints for the model (needs semgrep)",
    )
    review.add_argument(
        "--sast-rules",
        type=os.path.abspath,
        metavar="DIR",
        help="your own semgrep rules as well (in CI read from the trusted ref when in the repo)",
    )
    model = parser.add_argument_group("model settings (the API key comes from config or env)")
    model.add_argument("--protocol", metavar="NAME", help="openai, anthropic, gemini or a plugin's")
    model.add_argument("--model", dest="model_name", metavar="NAME", help="model name")
    model.add_argument("--endpoint", metavar="URL", help="API base URL")
    model.add_argument("--timeout", metavar="DURATION", help="per-request timeout, e.g. 120s")
    output = parser.add_argument_group("output")
    where = "; - for stdout, off for none"
    output.add_argument("--json", dest="json_path", metavar="PATH", help="JSON report path" + where)
    output.add_argument("--markdown", metavar="PATH", help="Markdown report path" + where)
    output.add_argument("--sarif", metavar="PATH", help="SARIF report path" + where)
    output.add_argument(
        "--gitlab", metavar="PATH", help="GitLab Code Quality report path (off by default)" + where
    )
    output.add_argument("--console", choices=[c.value for c in ConsoleMode])
    output.add_argument("--language", metavar="LANG", help="report language, e.g. en-US")
    output.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    output.add_argument(
        "--events",
        action="store_true",
        help="progress and the report files written as JSON lines on stderr, for a program "
        "driving the review (reviewflow mcp)",
    )
    output.add_argument("--report-dir", metavar="DIR", help="directory for this review's reports")
    output.add_argument(
        "--verbose",
        action="store_true",
        help="Prefect's logs and any traceback on stderr too (always in ~/.reviewflow/logs/)",
    )
    _add_prefect_flags(parser)
    _add_publish_flags(parser)


def _add_publish_flags(parser: argparse.ArgumentParser) -> None:
    publish = parser.add_argument_group(
        "pull/merge requests (the token from the platform's variable, e.g. GITHUB_TOKEN, never a"
        " flag)"
    )
    publish.add_argument(
        "--publish",
        choices=(*RESERVED, *platform_names()),
        help="post findings on the pull/merge request (auto: the platform of this CI, if any)",
    )
    publish.add_argument(
        "--pull-request", type=int, metavar="N", help="the pull/merge request (default: CI's)"
    )
    publish.add_argument(
        "--platform-repo",
        metavar="OWNER/NAME",
        help="GitHub or Gitea repository, GitLab project, Bitbucket WORKSPACE/REPO or PROJECT/REPO,"
        " Azure DevOps PROJECT/REPOSITORY",
    )
    publish.add_argument(
        "--api-url",
        metavar="URL",
        help="the platform's API base: GitHub Enterprise, self-managed GitLab, Bitbucket Data"
        " Center, Gitea/Forgejo, or the Azure DevOps collection URL",
    )


def _add_prefect_flags(parser: argparse.ArgumentParser) -> None:
    prefect = parser.add_argument_group("Prefect (local runs)")
    prefect.add_argument(
        "--no-server-reuse",
        action="store_true",
        help="stop the local Prefect server this run starts when it ends (always so in CI)",
    )
    prefect.add_argument(
        "--server-host",
        metavar="ADDR",
        help="the address the managed server listens on: one a Dask cluster's workers reach"
        " (default 127.0.0.1)",
    )
    prefect.add_argument(
        "--no-warm",
        action="store_true",
        help="run the review in this process, not in the warm review process (and start none)",
    )


# (name, one-line help, description, examples) for each `config` action.
_CONFIG_ACTIONS = (
    (
        "show",
        "effective configuration, API key redacted",
        "Print the effective configuration (defaults < config file < REVIEWFLOW_MODEL_* "
        "environment) as YAML; the API key is shown as ********.",
        "reviewflow config show",
    ),
    (
        "get",
        "one effective value (the API key in clear)",
        "Print one effective value by its dotted key; model.api_key is printed in clear.",
        "reviewflow config get model.name\n  reviewflow config get review.fail_on",
    ),
    (
        "set",
        "validate and store one value",
        "Validate VALUE for KEY and store it in the config file (atomically, mode 0600; a "
        "symlinked config file keeps its link). Names, keys, endpoints, paths and durations "
        'are taken as typed, other values are read as YAML; "" unsets a value.',
        "reviewflow config set model.name gpt-4o\n"
        "  reviewflow config set review.fail_on critical,high\n"
        "  reviewflow config set model.timeout 2m\n"
        '  reviewflow config set output.sarif ""',
    ),
    (
        "path",
        "path of the config file",
        "Print where the config file is (REVIEWFLOW_HOME moves it).",
        "reviewflow config path",
    ),
    (
        "test",
        "send one tiny request with the effective model settings",
        "Send one tiny request with the effective model settings and say what works or what "
        "is wrong (placeholder model, missing key, unreachable endpoint, rejected key, unknown "
        "model, wrong endpoint). Exit 0 when the model answered, 2 otherwise.",
        "REVIEWFLOW_MODEL_NAME=gpt-4o OPENAI_API_KEY=sk-... reviewflow config test",
    ),
)


def _sub_parser(
    sub: argparse._SubParsersAction[_Parser], name: str, help_: str, description: str, example: str
) -> _Parser:
    label = "examples" if "\n" in example else "example"
    return sub.add_parser(
        name,
        help=help_,
        description=textwrap.fill(description, 88),
        epilog=f"{label}:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _command_group(
    sub: argparse._SubParsersAction[_Parser], name: str, help_: str, description: str, example: str
) -> argparse._SubParsersAction[_Parser]:
    """A command with actions (`reviewflow NAME ACTION`); without one, its help is shown."""
    command = _sub_parser(sub, name, help_, description, example)
    command.set_defaults(help_parser=command)
    return command.add_subparsers(dest=f"{name}_action", metavar="ACTION")


def _add_config_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    actions = _command_group(
        sub,
        "config",
        "show or change ~/.reviewflow/config.yaml",
        "Show or change the configuration (REVIEWFLOW_HOME moves the home).",
        "reviewflow config set model.name gpt-4o",
    )
    parsers = {spec[0]: _sub_parser(actions, *spec) for spec in _CONFIG_ACTIONS}
    parsers["get"].add_argument("key", help="dotted key, e.g. model.name")
    parsers["set"].add_argument("key", help="dotted key, e.g. review.fail_on")
    parsers["set"].add_argument("value", help="new value, e.g. critical,high or 120s")


def _add_rules_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    rules_sub = _command_group(
        sub,
        "rules",
        "inspect rule resolution",
        "Inspect which rule a path is reviewed by.",
        "reviewflow rules check src/app.py",
    )
    check = _sub_parser(
        rules_sub,
        "check",
        "which rule applies to a path, and whether it is reviewed",
        "Show the rule that applies to PATH and the filter's decision for it.",
        "reviewflow rules check src/app.py --rule team-rules.json --json",
    )
    check.add_argument("path", help="repository-relative path")
    check.add_argument("--rule", dest="custom_rule", metavar="FILE", help="extra rules.json")
    check.add_argument("--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)
    check.add_argument("--repo", default=".", help="repository (default: current dir)")
    check.add_argument("--json", action="store_true", help="print JSON")


MAIN_EPILOG = """\
examples:
  reviewflow review --preview --commit HEAD    what a review of the last commit would cover
  reviewflow review --from origin/main --to HEAD --json report.json
  reviewflow config set model.name gpt-4o
  reviewflow config test                       check the model settings with one request

Run `reviewflow COMMAND --help` for a command's flags.
"""


def _add_server_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    actions = _command_group(
        sub,
        "server",
        "show, stop or prepare the local Prefect server reviewflow manages",
        "The local Prefect server reviews reuse (unless PREFECT_API_URL is set).",
        "reviewflow server status",
    )
    _sub_parser(
        actions,
        "status",
        "whether it runs, its URL (open it for the Prefect UI)",
        "Say whether the managed server runs, its pid, URL and Prefect home, and this install's "
        "warm review process; then what else runs for this reviewflow home (other Prefect "
        "versions' servers, other installs' warm processes).",
        "reviewflow server status",
    )
    stop = _sub_parser(
        actions,
        "stop",
        "stop it now (the next review starts it again)",
        "Stop every managed server and warm review process of this reviewflow home (every "
        "Prefect version and install); the next review starts what it needs again. While "
        "reviews run on them it stops nothing and names them (exit 2), unless --force.",
        "reviewflow server stop\n  reviewflow server stop --force",
    )
    stop.add_argument(
        "--force",
        action="store_true",
        help="cancel the reviews running on them first (each writes its reports as incomplete "
        "and exits 130; waited for a few seconds), then stop",
    )
    _sub_parser(
        actions,
        "prepare",
        "migrate its database now, then stop (a first start, done ahead)",
        "Give the managed server's Prefect home its first start now (database migrated, block "
        "types registered), then stop the server: the next review pays a cold start, not a "
        "first one. Run it where a home is built ahead, as the Docker image does. A server "
        "already running there is left alone; running it twice is harmless.",
        "reviewflow server prepare",
    )


def _add_dismiss_commands(sub: argparse._SubParsersAction[_Parser]) -> None:
    dismiss = _sub_parser(
        sub,
        "dismiss",
        "dismiss a finding for good (or --undo it)",
        "Record that a finding is not to be reported again: in the repository's "
        ".reviewflow/dismissed.json (commit it; in CI it is read at the trusted ref), or with "
        "--local in ~/.reviewflow/dismissed.json for this repository only. ID_OR_FINGERPRINT is a "
        "fingerprint (64 hex digits) or a finding ID (F + 12 hex digits) looked up in --report, "
        "else in this repository's reports under ~/.reviewflow/reports/, newest first.",
        "reviewflow dismiss F3a9c0d1e2f3a --reason 'test fixture, not a real key'\n"
        "  reviewflow dismiss --undo F3a9c0d1e2f3a",
    )
    dismiss.add_argument("finding", metavar="ID_OR_FINGERPRINT", help="F... ID or fingerprint")
    dismiss.add_argument("--reason", metavar="TEXT", help="why (one line, kept in the file)")
    dismiss.add_argument(
        "--local", action="store_true", help="in your reviewflow home, not the repository"
    )
    dismiss.add_argument(
        "--report", metavar="FILE", help="the JSON report the ID is from (default: the latest)"
    )
    dismiss.add_argument("--undo", action="store_true", help="remove the dismissal instead")
    dismiss.add_argument(
        "--repo", default=".", metavar="DIR", help="repository (default: current dir)"
    )
    listing = _sub_parser(
        sub,
        "dismissed",
        "list dismissed findings, or learn silencing rules from them",
        "List the dismissals that apply to the repository: its .reviewflow/dismissed.json "
        "(working tree) and your --local ones. With --suggest, propose silencing rules (a "
        "category or rule ID in a path glob) that the repository's dismissals support, those "
        "reviews found on pull requests included (from the reports in ~/.reviewflow/reports/ "
        "and those --report names), "
        "and name the rules file's expired or unused ones; --apply writes the proposals you "
        "accept into .reviewflow/rules.json (review and commit the change).",
        "reviewflow dismissed --json\n"
        "  reviewflow dismissed --suggest\n"
        "  reviewflow dismissed --suggest --apply S1a2b3c,S4d5e6f",
    )
    listing.add_argument(
        "--repo", default=".", metavar="DIR", help="repository (default: current dir)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--suggest", action="store_true", help="propose silencing rules learnt from dismissals"
    )
    listing.add_argument(
        "--apply",
        metavar="IDS",
        help="with --suggest: write these proposals (IDs separated by commas, or all) into "
        ".reviewflow/rules.json",
    )
    listing.add_argument(
        "--report",
        action="append",
        metavar="FILE",
        help="with --suggest: a JSON report kept outside the home (a CI job's) to learn from "
        "too; repeat for more",
    )
    listing.add_argument(
        "--min-count",
        type=int,
        metavar="N",
        help="with --suggest: dismissals a proposal needs at least (default: 2)",
    )
    listing.add_argument(
        "--expires-in",
        type=int,
        metavar="DAYS",
        help="with --suggest: the proposed rules expire after this many days (default: 90)",
    )


def _add_mcp_command(sub: argparse._SubParsersAction[_Parser]) -> None:
    mcp = _sub_parser(
        sub,
        "mcp",
        "serve the repository's reviews to a coding agent (MCP over stdio)",
        "Run a Model Context Protocol server on standard input and output for one repository, "
        "for a coding agent (Claude Code, Codex, Cursor, VS Code). Its tools: review, preview, "
        "findings, explain and dismiss, each the command of the same name's code path with the "
        "configured model and settings; no tool takes a model key. See docs/mcp.md.",
        "reviewflow mcp --repo .",
    )
    mcp.add_argument("--repo", default=".", metavar="DIR", help="repository (default: current dir)")


def _add_context_command(sub: argparse._SubParsersAction[_Parser]) -> None:
    context = _sub_parser(
        sub,
        "context",
        "what the model is given beyond the diff, per file, with its tokens; no model",
        "Print, for each file a review of the change would cover, the context pack the model "
        "is given beyond the diff (where the changed definitions are used, the definitions the "
        "changed lines use) with its tokens, then the code index's build. Takes the change "
        "flags of `review`; needs no model and starts no Prefect server.",
        "reviewflow context --commit HEAD\n"
        "  reviewflow context --from origin/main --to HEAD --json context.json\n"
        "  git diff | reviewflow context --diff - --json -",
    )
    _add_change_flags(context, preview=False)
    context.add_argument(
        "--json",
        dest="context_json",
        metavar="PATH",
        help="write the JSON document there; - for stdout (the text goes to stderr)",
    )
    context.set_defaults(no_cache=False)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reviewflow",
        description=DESCRIPTION,
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(help_parser=parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    review = sub.add_parser(
        "review",
        help="review a Git change",
        description="Review a Git change with a language model and deterministic validation.",
        epilog=REVIEW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_change_flags(review)
    _add_setting_flags(review)
    _add_context_command(sub)
    _add_rules_commands(sub)
    _add_config_commands(sub)
    _sub_parser(
        sub,
        "schema",
        "print the JSON Schema of the JSON report",
        "Print the JSON Schema (draft 2020-12) that every JSON report validates against.",
        "reviewflow schema > review-report.schema.json",
    )
    _sub_parser(
        sub,
        "version",
        "version, commit and build time",
        "Print reviewflow's version, the commit it was built from and the build time.",
        "reviewflow version",
    )
    _add_server_commands(sub)
    _add_dismiss_commands(sub)
    _add_mcp_command(sub)
    add_deployment_run(sub)
    return parser


def missing_action(args: argparse.Namespace) -> bool:
    """True when a command or a command's action was not given (its help is then shown)."""
    if args.command is None:
        return True
    return getattr(args, f"{args.command}_action", "") is None
