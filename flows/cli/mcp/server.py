"""The `reviewflow mcp` server: stdio, on the official `mcp` SDK (`MCPServer`), for one
repository. Each tool runs the CLI's own command as a child (`child.run_cli`), so its settings,
budgets, one-line errors and cancellation are the CLI's; `findings` and `explain` read the last
review's JSON report (`reviewflow.report.recall`). A failure is an MCP error whose message is
the line the CLI prints. One call at a time touches the repository's reviews (a lock): a call
after a cancelled review sees its report."""

from __future__ import annotations

import argparse
import json
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from flows.cli.mcp.child import Finished, run_cli
from flows.cli.mcp.tools import (
    AllFiles,
    Commit,
    ContextPack,
    Dismissed,
    Explanation,
    Files,
    FindingKey,
    FromRef,
    Instructions,
    Language,
    MaxCost,
    MaxTokens,
    NoCache,
    PreviewResult,
    ReviewResult,
    Sast,
    Threshold,
    ToRef,
    Verify,
    change_flags,
    setting_flags,
)
from reviewflow.config import home_dir, load_config
from reviewflow.errors import ReviewError
from reviewflow.git.repo import find_repo_root
from reviewflow.report.recall import explanation, last_report, read_report
from reviewflow.version import version_info

INSTRUCTIONS = (
    "reviewflow reviews Git changes of one repository with the configured model (read-only). "
    "`preview` shows what a review would cover and cost; `review` runs one (the workspace, a "
    "commit, or a range) and returns its findings; `findings` and `explain` read the last "
    "review; `dismiss` records that a finding is not to be reported again."
)
READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)


class Reviews:
    """The server's repository, environment and the lock its calls take."""

    def __init__(self, repo: Path, env: Mapping[str, str]) -> None:
        self.repo, self.env, self.home = repo, dict(env), home_dir(env)
        self.lock = anyio.Lock()

    def last_report(self) -> Path:
        """The repository's newest JSON report, where the CLI writes it: the configuration is
        read as a review reads it (the home's file and the environment), at each call."""
        output = load_config(self.home, self.env).output
        return last_report(self.home, self.repo, output)

    async def run(self, argv: list[str], ctx: Context | None = None) -> Finished:
        """`reviewflow ARGV` in the repository; with `ctx`, its progress events become MCP
        progress notifications (the first at once: the review is being prepared)."""
        if ctx is None:
            return await run_cli(argv, self.repo, self.env)
        progress = _Progress(ctx)
        await ctx.report_progress(progress.last, None, "preparing the review")
        return await run_cli(argv, self.repo, self.env, progress.send)


class _Progress:
    """A review's progress events as MCP progress notifications: files done of the total (a
    fraction below the next file moves as requests are answered: always increasing)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx, self.last = ctx, 0.0

    async def send(self, event: dict[str, Any]) -> None:
        if event["event"] != "progress":
            return
        done, total, requests = event["files_done"], event["files_total"], event["requests"]
        value = min(float(total), done + 0.9 * requests / (requests + 10))
        if value <= self.last:
            return
        self.last = value
        cost = "" if event.get("cost") is None else f", cost {event['cost']:.4f}"
        current = f"; reviewing {event['current'][-1]}" if event.get("current") else ""
        message = (
            f"{done}/{total} files, {requests} requests, {event['tokens']:,} tokens{cost}{current}"
        )
        await self.ctx.report_progress(value, float(total), message)


def refused(finished: Finished) -> MCPError:
    """The MCP error for a command that failed: the CLI's own line."""
    return MCPError(INVALID_PARAMS, finished.last_line())


def result(model: type[BaseModel], data: dict[str, Any]) -> CallToolResult:
    """A tool's result: `data` as its structured content (checked against `model` by the SDK),
    and as JSON text for clients that read only text."""
    model.model_validate(data)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def review_result(report: dict[str, Any], reports: dict[str, str], message: str | None) -> dict:
    keys = ("review_id", "status", "exit_code", "findings", "stats", "usage", "warnings", "errors")
    return {**{key: report.get(key) for key in keys}, "reports": reports, "message": message}


def failing(error: ReviewError) -> MCPError:
    """A domain error as the CLI prints it (`reviewflow: error: ...`)."""
    return MCPError(INVALID_PARAMS, f"reviewflow: error: {' '.join(str(error).split())}")


def build_server(reviews: Reviews) -> MCPServer:
    """The server and its tools."""
    server: MCPServer = MCPServer(
        "reviewflow", instructions=INSTRUCTIONS, version=str(version_info()["version"])
    )
    for add in (_add_review, _add_preview, _add_last_review, _add_dismiss):
        add(server, reviews)
    return server


def _add_review(server: MCPServer, reviews: Reviews) -> None:
    """The `review` tool: `reviewflow review` with its events."""

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def review(
        ctx: Context,
        commit: Commit = None,
        from_ref: FromRef = None,
        to_ref: ToRef = None,
        files: Files = None,
        all_files: AllFiles = False,
        max_tokens: MaxTokens = None,
        max_cost: MaxCost = None,
        verify: Verify = None,
        sast: Sast = None,
        context: ContextPack = None,
        language: Language = None,
        confidence_threshold: Threshold = None,
        instructions: Instructions = None,
        no_cache: NoCache = False,
    ) -> Annotated[CallToolResult, ReviewResult]:
        """Review a change of the repository with the configured model: the workspace (staged,
        unstaged and untracked changes) by default, one commit, a range, or files audited as they
        are with no diff (`files`, `all_files`). The configuration's
        settings and budgets apply, as for `reviewflow review`. Returns the findings as the JSON
        report has them and the report files; progress is reported as files are reviewed, and
        cancelling the call cancels the review as Ctrl-C does (its partial report is written:
        `findings` reads it)."""
        settings = {
            "max_tokens": max_tokens,
            "max_cost": max_cost,
            "verify": verify,
            "sast": sast,
            "context": context,
            "language": language,
            "confidence_threshold": confidence_threshold,
            "no_cache": no_cache,
        }
        flags = change_flags(commit, from_ref, to_ref, instructions, files, all_files)
        flags += setting_flags(settings)
        argv = ["review", "--repo", str(reviews.repo), *flags]
        argv += ["--json", "review-report.json", "--console", "off", "--no-progress", "--events"]
        async with reviews.lock:
            finished = await reviews.run(argv, ctx)
        written = finished.event("written")
        json_path = (written or {}).get("reports", {}).get("json")
        if written is None or json_path in (None, "-"):
            raise refused(finished)
        report = read_report(Path(json_path))
        message = finished.last_line() if finished.code in (2, 130) else None
        return result(ReviewResult, review_result(report, written["reports"], message))


def _add_preview(server: MCPServer, reviews: Reviews) -> None:
    """The `preview` tool: `reviewflow review --preview --json -`."""

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def preview(
        commit: Commit = None,
        from_ref: FromRef = None,
        to_ref: ToRef = None,
        files: Files = None,
        all_files: AllFiles = False,
        max_cost: MaxCost = None,
        sast: Sast = None,
        context: ContextPack = None,
        instructions: Instructions = None,
    ) -> Annotated[CallToolResult, PreviewResult]:
        """What a review of the change would cover and cost, with no model request: the files
        kept and excluded with the reason, the rules, and the cost estimate (`reviewflow review
        --preview`)."""
        settings = {"max_cost": max_cost, "sast": sast, "context": context}
        flags = change_flags(commit, from_ref, to_ref, instructions, files, all_files)
        flags += setting_flags(settings)
        argv = ["review", "--repo", str(reviews.repo), "--preview", *flags, "--json", "-"]
        finished = await reviews.run(argv)
        if finished.code != 0:
            raise refused(finished)
        doc = json.loads(finished.stdout)
        keys = ("metadata", "stats", "files", "excluded_files", "rules", "warnings", "estimate")
        text = "\n".join(finished.lines).strip()
        return result(PreviewResult, {**{k: doc.get(k) for k in keys}, "text": text})


def _add_last_review(server: MCPServer, reviews: Reviews) -> None:
    """The `findings` and `explain` tools: the last review's JSON report."""

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def findings() -> Annotated[CallToolResult, ReviewResult]:
        """The findings of the repository's last review (its JSON report where reviews write
        it: the reviewflow home, or the configured output.report_dir), with its status: a
        cancelled or incomplete review's are what it finished."""
        async with reviews.lock:  # a review being cancelled writes its report first
            try:
                path = reviews.last_report()
                report = read_report(path)
            except ReviewError as exc:
                raise failing(exc) from None
        return result(ReviewResult, review_result(report, {"json": str(path)}, None))

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def explain(finding: FindingKey) -> Annotated[CallToolResult, Explanation]:
        """One finding of the last review explained: the finding, its evidence, the rule its
        file was reviewed under, and its placement (its lines, the code and how the lines were
        found)."""
        async with reviews.lock:
            try:
                path = reviews.last_report()
                data = explanation(read_report(path), finding, path)
            except ReviewError as exc:
                raise failing(exc) from None
        return result(Explanation, data)


def _add_dismiss(server: MCPServer, reviews: Reviews) -> None:
    """The `dismiss` tool: `reviewflow dismiss`."""

    @server.tool(
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
    )
    async def dismiss(
        finding: FindingKey,
        reason: Annotated[str | None, Field(description="why (one line, kept in the file)")] = None,
        local: Annotated[
            bool, Field(description="record it in your reviewflow home, not the repository")
        ] = False,
        undo: Annotated[bool, Field(description="remove the dismissal instead")] = False,
    ) -> Dismissed:
        """Dismiss a finding for good, as `reviewflow dismiss` does: it is not reported again.
        Recorded in the repository's .reviewflow/dismissed.json (commit it to share it), or
        with `local` in your reviewflow home; an ID is looked up in the repository's reports."""
        argv = ["dismiss", "--repo", str(reviews.repo)]
        argv += [f"--reason={reason}"] if reason else []
        argv += ["--local"] if local else []
        argv += ["--undo"] if undo else []
        argv += ["--", finding]  # never read as a flag
        async with reviews.lock:
            finished = await reviews.run(argv)
        if finished.code != 0:
            raise refused(finished)
        return Dismissed(message=finished.stdout.strip())


# Signals that end the server: each review it runs is cancelled first (`child.cancel_child`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def serve(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """`reviewflow mcp`: serve the repository `--repo` over stdio until the client leaves or
    the server is told to stop (SIGINT, SIGTERM, SIGHUP: a review running is cancelled as
    Ctrl-C cancels it, its report written, before the server exits 130)."""
    repo = find_repo_root(Path(args.repo))  # a bad path: one line and exit 2, before serving
    server = build_server(Reviews(repo, env))
    return 130 if anyio.run(_until_stopped, server) else 0


async def _until_stopped(server: MCPServer) -> bool:
    """Serve stdio; True when a signal stopped the server (its calls cancelled first)."""
    stopped = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal stopped
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for _ in signals:
                    stopped = True
                    group.cancel_scope.cancel()  # every call's child gets its Ctrl-C
                    return

        async def stdio() -> None:
            await server.run_stdio_async()
            group.cancel_scope.cancel()  # the client left: stop watching

        group.start_soon(watch)
        group.start_soon(stdio)
    return stopped
