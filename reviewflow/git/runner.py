"""Running `git` with a fixed output format that user configuration cannot change."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.models import FileDiff
from reviewflow.git.parse import iter_lines, parse_lines

# `-c` settings that would otherwise change how diff output looks.
FORMAT_CONFIG = (
    "core.quotePath=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "diff.suppressBlankEmpty=false",
    "diff.submodule=short",
    "diff.interHunkContext=0",
    "color.ui=false",
    "color.diff=false",
    "core.pager=cat",
)
# Environment variables that would redirect git, reconfigure it, make it run other programs or
# write elsewhere, or change its diff output. Every git we run gets the same environment, in
# the CLI, in a warm process's child and in a deployed run. The user's configuration files stay
# (GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM): they are where git config lives.
_DROPPED_ENV = frozenset(
    {
        "GIT_EXTERNAL_DIFF",
        "GIT_DIFF_OPTS",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_PREFIX",
        "GIT_DIFF_PATH_COUNTER",
        "GIT_DIFF_PATH_TOTAL",
        "GIT_ATTR_SOURCE",  # git >= 2.40: would read attributes from a tree (in CI, the change's)
        "LANGUAGE",
        # Settings as `git -c` passes them (`core.fsmonitor` runs a program, for one).
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG",
        # Where git finds its programs, index, objects and refs.
        "GIT_EXEC_PATH",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_REPLACE_REF_BASE",
        "GIT_GRAFT_FILE",
        "GIT_SHALLOW_FILE",
        "GIT_QUARANTINE_PATH",
        "GIT_DEFAULT_HASH",
        # How pathspecs (the tools' file patterns) are read.
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
    }
)
# GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>, and GIT_TRACE* (which write to files or stderr).
_DROPPED_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_TRACE")
_CHUNK = 1 << 18


def diff_flags(context_lines: int) -> list[str]:
    """The flags every diff we run carries (before `--end-of-options` and the refs)."""
    return [
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--submodule=short",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "-M",
        "-C",
        f"-U{max(0, context_lines)}",
    ]


def git_env() -> dict[str, str]:
    """A scrubbed environment: C messages, no external diff, no optional index writes, and none
    of the variables that redirect or reconfigure git (`_DROPPED_ENV`)."""
    env = {key: value for key, value in os.environ.items() if not _dropped(key)}
    env.update(
        LC_ALL="C",
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
    )
    return env


def _dropped(name: str) -> bool:
    return name in _DROPPED_ENV or name.startswith(_DROPPED_PREFIXES)


def git_command(args: Sequence[str], options: Sequence[str] = ()) -> list[str]:
    """`git` with the fixed `-c` format settings, then top-level `options`, then `args`."""
    command = ["git"]
    for setting in FORMAT_CONFIG:
        command += ["-c", setting]
    return command + list(options) + list(args)


def _first_line(stderr: bytes, fallback: str) -> str:
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip().removeprefix("fatal: ").removeprefix("error: ")
    return fallback


def run_git(
    root: Path,
    args: Sequence[str],
    ok: tuple[int, ...] = (0,),
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    stdin: bytes = b"",
) -> bytes:
    """Run git in `root` and return its stdout; GitError (one line) on another exit code.

    `options` are top-level git options (such as `--literal-pathspecs`) put before `args`;
    `env` is added to the scrubbed environment; `stdin` is all git reads (`cat-file --batch`'s
    object names), then end of input: git never waits on a prompt.
    """
    try:
        result = subprocess.run(
            git_command(args, options),
            cwd=root,
            env={**git_env(), **(env or {})},
            capture_output=True,
            input=stdin or None,
            stdin=None if stdin else subprocess.DEVNULL,
        )
    except OSError as err:
        raise GitError(f"cannot run git: {err.strerror or err}") from None
    if result.returncode not in ok:
        message = _first_line(result.stderr, f"exit code {result.returncode}")
        raise GitError(f"git {args[0]} failed: {message}")
    return result.stdout


def stream_diff(
    root: Path,
    args: Sequence[str],
    digest: hashlib._Hash,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> tuple[list[FileDiff], list[str]]:
    """Run a git diff command, parse its output as it streams and hash the raw bytes.

    `options` go before `args`, `env` is added to the scrubbed environment.
    Returns the files and git's warnings (such as skipped rename detection).
    """
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                git_command(args, options),
                cwd=root,
                env={**git_env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                bufsize=0,
            )
        except OSError as err:
            raise GitError(f"cannot run git: {err.strerror or err}") from None
        with proc:
            parsed = False
            try:
                files = parse_lines(iter_lines(_chunks(proc, digest)))
                parsed = True
            finally:
                if not parsed:
                    proc.kill()
            code = proc.wait()
        errors.seek(0)
        stderr = errors.read()
    if code != 0:
        raise GitError(f"git {args[0]} failed: {_first_line(stderr, f'exit code {code}')}")
    text = stderr.decode("utf-8", "replace")
    return files, [ln.strip() for ln in text.splitlines() if ln.startswith("warning:")]


def stream_tree_diff(
    root: Path, args: Sequence[str], digest: hashlib._Hash
) -> tuple[list[FileDiff], list[str]]:
    """stream_diff for a diff between two trees, blind to the repository's `.gitattributes`.

    Git takes attributes from the `.gitattributes` files of the working tree (falling back
    to the index's), whatever trees are compared. In CI the checkout is the change under
    review, so a `.gitattributes` it adds (`* -diff`, `binary`, a `diff=` driver) could turn
    every file into "Binary files differ" and hide it from the review. A tree-to-tree diff
    needs neither, so git runs in an empty temporary directory that is also its work tree
    (git reads `.gitattributes` relative to its working directory when that lies outside
    the work tree), with a nonexistent index. Binary detection falls back to git's content
    check (a NUL byte). Attributes from outside the repository's content still apply:
    `$GIT_DIR/info/attributes`, `core.attributesFile` and the system file are the machine's
    own, not the change's. (`--attr-source`, git >= 2.40, would read some tree's instead.)
    """
    git_dir = os.fsdecode(run_git(root, ["rev-parse", "--absolute-git-dir"]).removesuffix(b"\n"))
    try:
        empty = tempfile.mkdtemp(prefix="reviewflow-noattr-")
    except OSError as err:
        raise GitError(f"cannot create a temporary directory: {err.strerror or err}") from None
    try:
        options = [f"--git-dir={git_dir}", f"--work-tree={empty}"]
        env = {"GIT_INDEX_FILE": os.path.join(empty, "no-index")}
        return stream_diff(Path(empty), args, digest, options, env)
    finally:
        shutil.rmtree(empty, ignore_errors=True)


def _chunks(proc: subprocess.Popen[bytes], digest: hashlib._Hash) -> Iterator[bytes]:
    stdout = proc.stdout
    if stdout is None:  # pragma: no cover - always a pipe here
        return
    while chunk := stdout.read(_CHUNK):
        digest.update(chunk)
        yield chunk
