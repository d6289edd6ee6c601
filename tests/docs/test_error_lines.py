"""Every example error line in the docs is the code's own: an exact line in a code block equals
what the CLI prints for the bad input the page describes; a message pattern (a troubleshooting
row, a `reviewflow: error: ...` quoted in the text, its *PATH*, *N*, `<reason>` and `...`
standing for what varies) matches the real message, produced by the CLI on a bad input where
that is cheap, else read from the string in the code that makes it. A line the docs gain
without a check here fails `test_every_example_line_has_a_check`.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from flows.cli.main import main
from tests.gitutil import GitRepo

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDERS = "|".join(  # the words the docs write in capitals for what varies
    "PATH NAME N REF KEY2 KEY VALUE PROTOCOL PLATFORM ID FILE REPORT URL PATTERN SHA DIR REPO "
    "A B X Y".split()
)


@dataclass(frozen=True)
class Example:
    page: str
    exact: bool  # a whole line in a code block, as printed; else a pattern


def documented() -> dict[str, Example]:
    """Each example error line or message pattern in README.md and docs/."""
    found: dict[str, Example] = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
            for line in block.splitlines():
                if re.match(r"(reviewflow: )?(error|warning): ", line):
                    found[line] = Example(path.name, exact=True)
        prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
        for span in re.finditer(r"(``?)(reviewflow: (?:error|warning): .*?)\1(?!`)", prose, re.S):
            found[" ".join(span.group(2).split())] = Example(path.name, exact=False)
        if path.name == "troubleshooting.md":
            found.update((row, Example(path.name, exact=False)) for row in _message_rows(text))
    return found


def _message_rows(text: str) -> list[str]:
    """The messages in the first column of troubleshooting's `| message |` tables (a row whose
    first cell is prose, such as "the token is refused (HTTP 401)", quotes none)."""
    rows, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| message |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            cell = line.split(" | ")[0].removeprefix("| ")
            quoted = re.match(r"(``?)(.+?)\1(?!`)( \(|$| or )", cell)
            if quoted:
                rows.append(quoted.group(2).strip())
    return rows


def _pattern(example: str) -> re.Pattern[str]:
    """The example as a pattern: its placeholders and `...` stand for any text."""
    parts = re.split(rf"(\.\.\.|<[^>]+>|\b(?:{PLACEHOLDERS})\b)", example)
    return re.compile("".join(".+?" if i % 2 else re.escape(p) for i, p in enumerate(parts)))


@dataclass
class Ctx:
    tmp: Path
    home: Path
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]

    def cli(self, *argv: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
        """The one line the CLI prints on stderr for `argv`, exit 2."""
        for name, value in (env or {}).items():
            self.monkeypatch.setenv(name, value)
        self.monkeypatch.chdir(cwd or self.tmp)
        self.capsys.readouterr()
        code: int | str | None
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
        err = self.capsys.readouterr().err
        lines = [line for line in err.splitlines() if not line.startswith("reviewflow: note:")]
        assert code == 2 and len(lines) == 1, (code, err)
        return lines[0].replace(str(self.home), "~/.reviewflow")

    def repo(self) -> GitRepo:
        repo = GitRepo.init(self.tmp / "repo")
        repo.write("a.py", "x = 1\n")
        repo.commit("base")
        repo.write("a.py", "x = 2\n")
        return repo

    def config(self, text: str) -> None:
        (self.home / "config.yaml").write_text(text)


def from_code(
    module: str, marker: str, values: dict[str, str] | None = None
) -> Callable[[Ctx], str]:
    """The message as the code writes it: the string literal in `module` holding `marker`,
    each `{expression}` of an f-string shown as `<expression>`, or as its value in `values`."""

    def read(_: Ctx) -> str:
        tree = ast.parse((ROOT / module).read_text())
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            text = None if id(node) in docstrings else _literal(node)
            if text is not None and marker in text:
                for expression, value in (values or {}).items():
                    text = text.replace(f"<{expression}>", value)
                return text.rstrip("\n")
        raise AssertionError(f"no message holding {marker!r} in {module}")

    return read


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    pieces = []
    for part in node.values:
        if isinstance(part, ast.FormattedValue):
            pieces.append(f"<{ast.unparse(part.value)}>")
        elif isinstance(part, ast.Constant):
            pieces.append(str(part.value))
    return "".join(pieces)


def _model_env() -> dict[str, str]:
    return {"REVIEWFLOW_MODEL_NAME": "gpt-4o", "REVIEWFLOW_MODEL_API_KEY": "sk-test"}


def _preview(ctx: Ctx, *args: str, env: dict[str, str] | None = None) -> str:
    repo = ctx.repo()
    return ctx.cli("review", "--preview", "--repo", str(repo.root), *args, env=env)


def _review(ctx: Ctx, *args: str, env: dict[str, str] | None = None) -> str:
    """A model review whose setup is refused before Prefect starts (no model is reached)."""
    repo = ctx.repo()
    return ctx.cli("review", "--repo", str(repo.root), *args, env=env)


def _bad_model_section(ctx: Ctx) -> str:
    ctx.config("model: gpt-4o\n")
    return _preview(ctx)


def _conflict(ctx: Ctx) -> str:
    ctx.config("model:\n  platform: bedrock\n")
    line = _preview(ctx, env={"REVIEWFLOW_MODEL_PROTOCOL": "openai"})
    return line.replace("~/.reviewflow", "/home/me/.reviewflow")


def _bad_yaml(ctx: Ctx) -> str:
    ctx.config("review:\n  concurrency: 4: 5\n")
    return _preview(ctx)


def _malformed_diff(ctx: Ctx) -> str:
    repo = ctx.repo()
    (ctx.tmp / "x.diff").write_text("diff --git a/a.py b/a.py\n@@ nonsense @@\n")
    return ctx.cli("review", "--preview", "--repo", str(repo.root), "--diff", "x.diff")


def _stdin_closed(ctx: Ctx) -> str:
    from reviewflow.git.repo import read_stdin

    with pytest.raises(Exception) as caught:
        read_stdin(None)
    return str(caught.value)


def _instructions_too_large(ctx: Ctx) -> str:
    repo = ctx.repo()
    repo.write("docs/review.md", "x" * 20000)
    return ctx.cli(
        "review", "--preview", "--repo", str(repo.root), "--instructions", "docs/review.md",
        cwd=repo.root,
    )  # fmt: skip


def _invalid_rules(ctx: Ctx) -> str:
    repo = ctx.repo()
    repo.write(".reviewflow/rules.json", '{"rulez": []}')
    return _preview_in(ctx, repo)


def _preview_in(ctx: Ctx, repo: GitRepo, *args: str) -> str:
    return ctx.cli("review", "--preview", "--repo", str(repo.root), *args)


def _invalid_glob(ctx: Ctx) -> str:
    from reviewflow.globs.match import GlobSet

    with pytest.raises(ValueError) as caught:
        GlobSet(["src/[[:nope:]]"])
    return str(caught.value)


def _no_dismissal(ctx: Ctx) -> str:
    repo = ctx.repo()
    return ctx.cli("dismiss", "--undo", "F0123456789ab", "--repo", str(repo.root), cwd=repo.root)


def _unknown_key(ctx: Ctx) -> str:
    return ctx.cli("config", "set", "review.concurency", "3")


def _sast_rules_empty(ctx: Ctx) -> str:
    from reviewflow.errors import SastError
    from reviewflow.sast.ruleset import load_sast_rules

    (ctx.tmp / "rules").mkdir()
    with pytest.raises(SastError) as caught:
        load_sast_rules(str(ctx.tmp / "rules"), ctx.tmp, None)
    return str(caught.value)


def _cannot_write(ctx: Ctx) -> str:
    return _preview(ctx, "--json", "/proc/version/report.json")


def _unreadable_home(ctx: Ctx) -> str:
    """`server status` with a file where the Prefect home's folder goes."""
    from flows.local.settings import prefect_home

    home = ctx.tmp / "home"
    home.mkdir()
    prefect_home(home).parent.mkdir(parents=True, exist_ok=True)
    prefect_home(home).write_text("")
    return ctx.cli("server", "status", env={"REVIEWFLOW_HOME": str(home)})


def _no_region(ctx: Ctx) -> str:
    ctx.config("model:\n  platform: bedrock\n")
    return _review(ctx, env={"REVIEWFLOW_MODEL_NAME": "anthropic.claude-v2"})


def _refusal() -> str:
    from flows.local.control import refusal
    from flows.local.reviews import RunningReview

    started = _local_epoch("14:03:07")
    review = RunningReview(4242, "its process start", "/src/app", started)
    return f"reviewflow: error: {refusal([review])}"


def _local_epoch(clock: str) -> float:
    import time

    day = time.strftime("%Y-%m-%d", time.localtime())
    return time.mktime(time.strptime(f"{day} {clock}", "%Y-%m-%d %H:%M:%S"))


def _model_failure(ctx: Ctx) -> str:
    """`config test` against a loopback port nothing listens on."""
    endpoint = {"REVIEWFLOW_MODEL_ENDPOINT": "http://127.0.0.1:9/v1"}
    return ctx.cli("config", "test", env={**_model_env(), **endpoint})


CLI = "flows/cli/"


def _publish_warning(ctx: Ctx, repo: str, number: str) -> str:
    """The line the CLI writes (flows/cli/review.py) around the reason the flow gives."""
    line = from_code(CLI + "review.py", "<run.publish_error>")(ctx)
    values = {"context.ref.repo": repo, "context.ref.number": number}
    reason = from_code("flows/review_flow.py", "publishing on ", values)(ctx)
    return line.replace("<run.publish_error>", reason)


def _no_api(c: Ctx) -> str:
    """`deployment-run` with no Prefect API set (one another test of this process set is not
    the user's: Prefect reads its settings once, so the variable alone cannot unset it)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    c.monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        return c.cli("deployment-run", "ci-review/ci-review")


CHECKS: dict[str, Callable[[Ctx], str]] = {
    # reports.md: bad values named as the user wrote them
    "reviewflow: error: invalid value for --fail-on: 'urgent' (accepted: one or more of critical, "
    "high, medium, low, e.g. critical,high)": lambda c: _preview(c, "--fail-on", "urgent"),
    "reviewflow: error: invalid value for 'model' in ~/.reviewflow/config.yaml: 'gpt-4o' "
    "(accepted: a section with the keys protocol, name, endpoint, api_key, timeout, "
    "api_key_block, platform, region, project, deployment, api_version, price; e.g. model: "
    "{name: ...})": _bad_model_section,
    "reviewflow: error: invalid value for REVIEWFLOW_MODEL_TIMEOUT: 'soon' (accepted: a positive "
    "duration such as 120s, 2m, 1m30s or 500ms, at most one day)": lambda c: _preview(
        c, env={"REVIEWFLOW_MODEL_TIMEOUT": "soon"}
    ),
    "reviewflow: error: invalid value for --console: 'loud' (accepted: detailed, summary, off)": (
        lambda c: _preview(c, "--console", "loud")
    ),
    "reviewflow: error: unknown flag --forc (did you mean --force?)": lambda c: c.cli(
        "server", "stop", "--forc"
    ),
    # configuration.md: two sources that conflict
    "reviewflow: error: conflicting settings: 'model.platform' in /home/me/.reviewflow/config.yaml"
    " is 'bedrock' and REVIEWFLOW_MODEL_PROTOCOL is 'openai': the bedrock platform speaks the "
    "anthropic protocol, not openai; change or unset one of them": _conflict,
    "conflicting settings: A is 'X' and B is 'Y': ...": _conflict,
    # the text of the pages
    "reviewflow: error: PREFECT_API_URL is not set: ...": _no_api,
    "reviewflow: error: cannot tell whether the local Prefect server runs: cannot read <path>: "
    "<reason>": _unreadable_home,
    "reviewflow: warning: cannot record this review in <folder> (<reason>): `reviewflow server "
    "stop` will not know it is running": from_code("flows/local/reviews.py", "cannot record"),
    "reviewflow: error: not stopping: a review runs on the local Prefect server: pid 4242 "
    "(/src/app, since 14:03:07); wait for it to end, or cancel it (reported incomplete) and stop "
    "with `reviewflow server stop --force`": lambda c: _refusal(),
    "reviewflow: error: the review ended unexpectedly in the warm review process (crashed or "
    "killed); see <that log>": from_code("flows/local/warm/client.py", "ended unexpectedly"),
    "reviewflow: error: model <protocol>/<name> at <endpoint>: <what failed>; hint: <fix>": (
        _model_failure
    ),
    "reviewflow: warning: publishing on acme/app#7 failed: ...": lambda c: _publish_warning(
        c, "acme/app", "7"
    ),
    "reviewflow: warning: publishing on REPO#N failed: ...": lambda c: _publish_warning(
        c, "REPO", "N"
    ),
    "reviewflow: error: instructions file docs/review.md (--instructions / review.instructions) "
    "is 20000 bytes, over the limit of 16384 bytes (16 KiB): shorten it": _instructions_too_large,
    "reviewflow: error: ...": lambda c: _preview(c, "--console", "loud"),
    # troubleshooting.md: the change
    "not a Git repository: PATH": lambda c: c.cli("review", "--preview", "--repo", str(c.tmp)),
    "--from and --to must be given together": lambda c: _preview(c, "--from", "HEAD"),
    "--commit cannot be combined with --from/--to": lambda c: _preview(
        c, "--commit", "HEAD", "--from", "HEAD", "--to", "HEAD"
    ),
    "unknown revision 'REF'": lambda c: _preview(c, "--commit", "no-such-ref"),
    # docs/mcp.md: the line an MCP tool's error carries, the CLI's in full
    "reviewflow: error: unknown revision 'REF'": lambda c: _preview(c, "--commit", "no-such-ref"),
    "malformed diff at line N: ...": _malformed_diff,
    "cannot read the diff from stdin: stdin is closed": _stdin_closed,
    # configuration
    "invalid value for KEY: VALUE (accepted: ...)": lambda c: _preview(c, "--fail-on", "urgent"),
    "unknown config key 'KEY' (did you mean 'KEY2'?)": _unknown_key,
    "invalid YAML in PATH line N: ...": _bad_yaml,
    "no model configured (the model name is the placeholder 'configured-model')": _review,
    "no API key for the PROTOCOL protocol: set ...": lambda c: _review(
        c, env={"REVIEWFLOW_MODEL_NAME": "gpt-4o"}
    ),
    "the PLATFORM platform needs a region: ...": _no_region,
    "review.max_cost (VALUE) needs the price of model 'NAME', which is not in the bundled table: "
    "...": lambda c: _review(
        c, "--max-cost", "1", env={**_model_env(), "REVIEWFLOW_MODEL_NAME": "house-model"}
    ),
    # rules, instructions, dismissals
    "invalid rules file PATH: ...": _invalid_rules,
    "invalid glob 'PATTERN': ...": _invalid_glob,
    "cannot read instructions file PATH at REF: ...": from_code(
        "reviewflow/rules/instructions.py", "read instructions file <rel> at"
    ),
    "no dismissal of ID in FILE (see `reviewflow dismissed`)": _no_dismissal,
    "finding ID is not in report REPORT: give its fingerprint instead": from_code(
        "reviewflow/report/lookup.py", "is not in report"
    ),
    # SAST
    "--sast: semgrep is not installed (...)": from_code(
        "reviewflow/sast/semgrep.py", "semgrep is not installed"
    ),
    "--sast: semgrep refused the rules: ...": from_code(
        "reviewflow/sast/semgrep.py", "semgrep refused the rules"
    ),
    "--sast-rules DIR: no .yaml or .yml rule file there": _sast_rules_empty,
    # reports
    "cannot write PATH: ...": _cannot_write,
    "the json and markdown reports go to stdout ('-'): at most one report can": lambda c: _review(
        c, "--json", "-", "--markdown", "-", env=_model_env()
    ),
    "report not written: ...": from_code("reviewflow/report/gate.py", "report not written"),
    # pull requests
    "--publish PLATFORM needs a token: set ...": lambda c: _preview(
        c, "--publish", "github", "--platform-repo", "acme/app", "--pull-request", "7"
    ),
    "--publish PLATFORM needs the pull request: --pull-request N": lambda c: _preview(
        c, "--publish", "gitea", "--platform-repo", "acme/app", "--api-url", "http://127.0.0.1:9"
    ),
    "--publish reviews the request's commits: it cannot review a --diff": lambda c: _preview(
        c, "--publish", "github", "--diff", "-"
    ),
    "the pull request's head commit SHA is not in this clone: fetch it (...)": from_code(
        "reviewflow/publish/preflight.py",
        "is not in this clone",
        {"spec.noun": "pull request", "name": "head"},
    ),
    "this clone is shallow: ...": from_code("reviewflow/publish/preflight.py", "clone is shallow"),
    # the local server
    "the local Prefect server did not answer in time (log: PATH)": from_code(
        "flows/local/process.py", "did not answer in time"
    ),
    "the local Prefect server cannot listen on <address>: <reason>": from_code(
        "flows/local/process.py", "cannot listen on"
    ),
    "the local Prefect server listens on <address>, where ...": from_code(
        "flows/local/api.py", "the local Prefect server listens on"
    ),
    "not permitted to signal pid N (another user's process?)": from_code(
        "flows/local/process.py", "not permitted to signal"
    ),
    "the Prefect API at URL refused: ...": from_code(CLI + "deployment_run.py", "refused: "),
    "cannot reach the Dask scheduler at <address> (review.dask_address): <reason>": (
        lambda _: _scheduler_refused()
    ),
    "the Dask scheduler at <address> (review.dask_address) has no worker (waited N s)": (
        from_code("flows/preflight.py", "has no worker", {"WORKERS_WAIT_S": "10"})
    ),
    "the Dask worker <worker> cannot reach the Prefect API at URL: ...": from_code(
        "flows/preflight.py", "cannot reach the Prefect API at"
    ),
    "no API key for the PROTOCOL protocol on the Dask worker <worker> (nor here): ...": (
        from_code("flows/preflight.py", "on the Dask worker")
    ),
}


def _scheduler_refused() -> str:
    """The scheduler check's line for an address where nothing listens."""
    import socket

    from reviewflow.config.placement import check_scheduler
    from reviewflow.errors import ConfigError

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ConfigError) as refused:
        check_scheduler(address)
    return str(refused.value)


def test_every_example_line_has_a_check() -> None:
    found = documented()
    assert len(found) >= 40
    unchecked = sorted(f"{page}: {line}" for line, page in found.items() if line not in CHECKS)
    assert unchecked == [], "add a check to CHECKS in tests/docs/test_error_lines.py"
    stale = sorted(line for line in CHECKS if line not in found)
    assert stale == [], "no page shows these any more: remove their checks"


@pytest.mark.parametrize("example", sorted(CHECKS))
def test_the_example_is_the_real_message(
    example: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ctx = Ctx(tmp_path, Path(os.environ["REVIEWFLOW_HOME"]), monkeypatch, capsys)
    real = CHECKS[example](ctx)
    if documented()[example].exact:
        assert real == example
    else:
        shown = real.removeprefix("reviewflow: error: ").removeprefix("reviewflow: warning: ")
        target = real if example.startswith("reviewflow: ") else shown
        assert _pattern(example).match(target), f"the code says: {real}"
