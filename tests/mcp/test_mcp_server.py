"""`reviewflow mcp` driven by the `mcp` SDK's own client over stdio (a real client, not ours):
its tools listed with typed schemas, bad arguments refused with the CLI's own line, a review of
a real repository against the scripted model with its progress, the last review's findings
read back, explained and dismissed, a review cancelled mid-way by cancelling the call (its
partial report written, nothing left running), and one cancelled by SIGTERM to the server (an
agent quitting). One server process serves each test's checks."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from flows.cli.main import main
from reviewflow.report.recall import last_report, read_report
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_resume import FAST, ROOT, SLOW, HangOnSlow, _changed_repo
from tests.flows.test_review_e2e import SPLIT
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

TOOLS = {"review", "preview", "findings", "explain", "dismiss"}
FINDING = {**SPLIT, "file": FAST, "existing_code": "return open('x').read()"}
WAIT_S = 180  # bounds on waiting for a busy machine, never asserted as a duration


@contextlib.asynccontextmanager
async def connected(repo: Path, errlog: io.TextIOBase) -> AsyncIterator[ClientSession]:
    """A session with `reviewflow mcp --repo REPO`, run as an agent runs it (stdio)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "flows.cli", "mcp", "--repo", str(repo)],
        env=dict(os.environ),
        cwd=ROOT,
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),  # type: ignore[arg-type]
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _model_env(monkeypatch: pytest.MonkeyPatch, wire: WireServer) -> None:
    """The configured model, from the server's environment (no tool takes a key)."""
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)


def _cli_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `reviewflow ARGV` prints on stderr, and exit 2."""
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


async def _refused(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(MCPError) as caught:
        await session.call_tool(tool, arguments)
    return caught.value.message


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT_S):
        while not condition():
            await anyio.sleep(0.1)


def test_tools_are_typed_and_bad_input_gets_the_clis_line(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _changed_repo(repo.root)
    _model_env(monkeypatch, wire)
    root = str(repo.root)
    expected = {
        "ref": _cli_line(
            ["review", "--repo", root, "--commit=nosuchref", "--console", "off"], capsys
        ),
        "range": _cli_line(["review", "--repo", root, "--from=HEAD~1", "--preview"], capsys),
        "budget": _cli_line(["review", "--repo", root, "--max-cost=lots", "--preview"], capsys),
        "key": _cli_line(["dismiss", "--repo", root, "--", "not-a-finding"], capsys),
    }
    with monkeypatch.context() as inside:  # the tool's paths are the repository's, as in it
        inside.chdir(repo.root)
        audit_argv = ["review", "--repo", root, "--files", "nosuch.py", "--preview"]
        expected["audit"] = _cli_line(audit_argv, capsys)
    assert all(line.startswith("reviewflow: error: ") for line in expected.values()), expected

    async def checks() -> None:
        with tempfile.TemporaryFile("w+") as errlog:
            async with connected(repo.root, errlog) as session:
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}
                assert set(tools) == TOOLS
                for tool in tools.values():
                    assert tool.description and tool.output_schema, tool.name
                    inputs = tool.input_schema["properties"]
                    assert not {"api_key", "key", "endpoint", "protocol"} & set(inputs)
                    for name, schema in inputs.items():
                        assert schema.get("description"), (tool.name, name)
                review, annotations = tools["review"].output_schema, tools["review"].annotations
                assert review is not None and annotations is not None
                assert set(review["properties"]) >= {"findings", "reports"}
                assert annotations.read_only_hint is True

                got = await _refused(session, "review", {"commit": "nosuchref"})
                assert got == expected["ref"]
                assert (
                    await _refused(session, "preview", {"from_ref": "HEAD~1"}) == expected["range"]
                )
                assert (
                    await _refused(session, "preview", {"max_cost": "lots"}) == expected["budget"]
                )
                assert (
                    await _refused(session, "dismiss", {"finding": "not-a-finding"})
                    == expected["key"]
                )
                got = await _refused(session, "preview", {"files": ["nosuch.py"]})
                assert got == expected["audit"]
                audit = await session.call_tool("preview", {"files": [FAST]})
                assert not audit.is_error, audit.content
                assert audit.structured_content is not None
                assert audit.structured_content["metadata"]["mode"] == "audit"
                assert [f["path"] for f in audit.structured_content["files"]] == [FAST]
                no_review = await _refused(session, "findings", {})
                assert no_review.startswith("reviewflow: error: no review of ")
                wrong_type = await session.call_tool("review", {"confidence_threshold": "high"})
                assert wrong_type.is_error  # the SDK's own check of the typed input
                assert not wire.requests()  # nothing reached the model

    anyio.run(checks)


@pytest.mark.usefixtures("prefect_harness")
def test_a_review_its_findings_and_a_cancelled_review(
    repo: GitRepo, wire: WireServer, rf_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _changed_repo(repo.root)
    _model_env(monkeypatch, wire)
    wire.respond("openai", ScriptedReviewer({FAST: [FINDING], SLOW: []}))
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def checks() -> None:
        with tempfile.TemporaryFile("w+") as errlog:
            async with connected(repo.root, errlog) as session:
                done = await session.call_tool(
                    "review", {"commit": "HEAD"}, progress_callback=on_progress
                )
                assert not done.is_error, done.content
                review = done.structured_content
                assert review is not None
                assert (review["status"], review["exit_code"]) == ("complete", 1)
                assert [f["path"] for f in review["findings"]] == [FAST]
                report = Path(review["reports"]["json"])
                assert report.is_file() and report.is_relative_to(rf_home / "reports")
                values = [value for value, _, _ in seen]
                assert values == sorted(set(values)) and values[-1] == 2.0  # both files done
                assert seen[-1][1] == 2.0 and "2/2 files" in (seen[-1][2] or "")

                last = (await session.call_tool("findings", {})).structured_content
                assert last is not None and last["findings"] == review["findings"]
                key = review["findings"][0]["id"]
                explained = (
                    await session.call_tool("explain", {"finding": key})
                ).structured_content
                assert explained is not None
                assert explained["evidence"] == FINDING["evidence"]
                assert explained["placement"]["path"] == FAST
                assert explained["placement"]["meaning"]
                assert explained["rule"] is not None
                dismissed = await session.call_tool("dismiss", {"finding": key, "local": True})
                assert "dismissed" in (dismissed.structured_content or {})["message"]
                undo = {"finding": key, "local": True, "undo": True}
                assert not (await session.call_tool("dismiss", undo)).is_error

                cancelled = await _cancelled_review(session, repo, wire)
                await _stopped_server(session, repo, wire, rf_home, cancelled)

    anyio.run(checks)


async def _review_until_fast_done(
    session: ClientSession, wire: WireServer, group: TaskGroup, scope: anyio.CancelScope
) -> None:
    """Start a review (no cache) whose slow file hangs, in `scope`; return once its progress
    says the fast file is done and the slow file has been asked."""
    wire.respond("openai", HangOnSlow({FAST: [FINDING], SLOW: []}))
    before = len(wire.requests())
    reviewed: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reviewed.append(progress)

    def fast_done_slow_asked() -> bool:
        asked = any(SLOW in str(request.body) for request in wire.requests()[before:])
        return asked and any(value >= 1.0 for value in reviewed)  # 1 of 2 files done

    async def call() -> None:
        with scope:
            arguments = {"commit": "HEAD", "no_cache": True}
            await session.call_tool("review", arguments, progress_callback=on_progress)
            raise AssertionError("the review ended before it was cancelled")

    group.start_soon(call)
    await _until(fast_done_slow_asked)


async def _cancelled_review(session: ClientSession, repo: GitRepo, wire: WireServer) -> str:
    """The call cancelled once the fast file is done: the review is cancelled as Ctrl-C would
    cancel it, and `findings` (which waits for it) reads its partial report (its ID returned)."""
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()
        await _review_until_fast_done(session, wire, group, scope)
        scope.cancel()
    last = (await session.call_tool("findings", {})).structured_content
    assert last is not None
    _assert_cancelled(last)
    assert _reviews_running(repo.root) == []
    return str(last["review_id"])


async def _stopped_server(
    session: ClientSession, repo: GitRepo, wire: WireServer, home: Path, previous: str
) -> None:
    """SIGTERM to the server mid-review (an agent quitting): the review is cancelled as
    Ctrl-C cancels it, its partial report written, before the server exits."""
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()
        await _review_until_fast_done(session, wire, group, scope)
        os.kill(_server_pid(repo.root), signal.SIGTERM)
        await _until(lambda: not _reviews_running(repo.root))
        scope.cancel()  # the call's answer never comes: the server is gone
    last = read_report(last_report(home, repo.root))
    assert last["review_id"] != previous
    _assert_cancelled(last)


def _assert_cancelled(report: dict[str, Any]) -> None:
    assert (report["status"], report["exit_code"]) == ("incomplete", 130)
    assert [f["path"] for f in report["findings"]] == [FAST]  # the finished file is kept
    assert "cancelled" in [warning["code"] for warning in report["warnings"]]


def _processes() -> list[tuple[int, list[str]]]:
    """Each live process's pid and command line."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit():
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                found.append((int(proc.name), [part.decode(errors="replace") for part in argv]))
    return found


def _reviews_running(root: Path) -> list[str]:
    """Command lines of live `reviewflow review` processes of this repository."""
    return [
        " ".join(argv)
        for _, argv in _processes()
        if "review" in argv and str(root) in argv and "--events" in argv
    ]


def _server_pid(root: Path) -> int:
    """The `reviewflow mcp` process this test's client started."""
    (pid,) = [
        pid
        for pid, argv in _processes()
        if argv[1:6] == ["-m", "flows.cli", "mcp", "--repo", str(root)]
    ]
    return pid
