"""Indexing a Git tree: list its source files, parse only the blobs not yet in the store.

`git ls-tree -r -l` names every file with its blob id and size; `git cat-file --batch` reads
the blobs the store lacks in one process. Files larger than `MAX_FILE_BYTES` (generated or
vendored bundles) are listed but not parsed.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from reviewflow.context.languages import language_name, load
from reviewflow.context.parse import parse_source
from reviewflow.context.query import CodeIndex
from reviewflow.context.records import FileIndex, IndexStats
from reviewflow.context.store import IndexStore
from reviewflow.errors import GitError
from reviewflow.git.runner import git_command, git_env, run_git

MAX_FILE_BYTES = 1 << 20
_SAVE_EVERY = 500

Progress = Callable[[int, int], None]
"""Called with (blobs parsed so far, blobs to parse)."""


def build_index(
    repo: Path, tree_ish: str, store: IndexStore, progress: Progress | None = None
) -> IndexStats:
    """Index the source files of `tree_ish`, parsing only blobs the store has no record of."""
    return _update(repo, tree_ish, store, progress)[2]


def index_tree(
    repo: Path, tree_ish: str, store: IndexStore, progress: Progress | None = None
) -> CodeIndex:
    """`build_index`, then the index of the tree itself (every record loaded), to query."""
    files, parsed, stats = _update(repo, tree_ish, store, progress)
    keys = {key for _, key in files.values()}
    records = {**store.load(keys - set(parsed)), **parsed}
    return CodeIndex(
        repo=repo,
        files={path: records[key] for path, (_, key) in files.items() if key in records},
        blobs={path: blob for path, (blob, _) in files.items()},
        stats=stats,
    )


def _update(
    repo: Path, tree_ish: str, store: IndexStore, progress: Progress | None
) -> tuple[dict[str, tuple[str, str]], dict[str, FileIndex], IndexStats]:
    """Parse and store the blobs of `tree_ish` the store lacks: (files, new records, stats)."""
    started = time.monotonic()
    files = list_sources(repo, tree_ish)  # path -> (blob, key)
    keys = {key for _, key in files.values()}
    todo = sorted(keys - store.present(keys))
    blob_of_key = {key: blob for blob, key in files.values()}
    parsed: dict[str, FileIndex] = {}
    pending: list[tuple[str, FileIndex]] = []
    for done, (key, source) in enumerate(_read_blobs(repo, todo, blob_of_key), start=1):
        record = parse_source(source, key.split(":", 1)[0])
        parsed[key] = record
        pending.append((key, record))
        if len(pending) >= _SAVE_EVERY:
            store.save(pending)
            pending.clear()
        if progress is not None:
            progress(done, len(todo))
    store.save(pending)
    fresh = sum(1 for _, key in files.values() if key in parsed)
    stats = IndexStats(
        files=len(files),
        parsed=fresh,
        reused=len(files) - fresh,
        seconds=round(time.monotonic() - started, 3),
    )
    return files, parsed, stats


def list_sources(repo: Path, tree_ish: str) -> dict[str, tuple[str, str]]:
    """Every source file of the tree the index reads: path -> (blob id, record key)."""
    out = run_git(repo, ["ls-tree", "-r", "-l", "-z", "--full-tree", tree_ish, "--"])
    files: dict[str, tuple[str, str]] = {}
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) != 4 or fields[1] != "blob" or fields[0] == "120000":
            continue
        language = language_name(path)
        if language is None or not fields[3].isdigit() or int(fields[3]) > MAX_FILE_BYTES:
            continue
        files[path] = (fields[2], f"{load(language).key}:{fields[2]}")
    return files


def _read_blobs(
    repo: Path, keys: list[str], blob_of_key: dict[str, str]
) -> Iterator[tuple[str, bytes]]:
    """(key, content) of each key's blob, in order, from one `git cat-file --batch`."""
    if not keys:
        return
    try:
        proc = subprocess.Popen(
            git_command(["cat-file", "--batch"]),
            cwd=repo,
            env=git_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError as err:
        raise GitError(f"cannot run git: {err.strerror or err}") from None
    assert proc.stdin is not None and proc.stdout is not None
    names = "".join(f"{blob_of_key[key]}\n" for key in keys).encode()
    writer = threading.Thread(target=_feed, args=(proc.stdin, names), daemon=True)
    writer.start()
    try:
        for key in keys:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(f"git cat-file failed: cannot read blob {blob_of_key[key]}")
            content = proc.stdout.read(int(header[2]) + 1)[:-1]
            yield key, content
    finally:
        proc.kill()
        proc.wait()
        writer.join()


def _feed(stdin: object, data: bytes) -> None:
    try:
        stdin.write(data)  # type: ignore[attr-defined]
        stdin.close()  # type: ignore[attr-defined]
    except OSError:
        pass
