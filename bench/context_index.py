"""The code index (reviewflow.context) on real repositories: full build, one-commit updates,
the store on disk, and the context packs of real commits.

    python bench/context_index.py CLONE [CLONE...] [--commits 40] [--budget 1500]

Per repository (a clone with history):
- full build of HEAD into an empty store, in a child process: wall, CPU, peak RSS, files;
- the store's size on disk (SQLite, zlib records), beside the same records as JSON lines, and
  the time to load every record of the tree from each;
- one-commit updates: for each of the newest N non-merge commits that change a source file,
  the store holds its parent, then the commit is indexed (`build_index`: only its new blobs
  are parsed), then loaded for queries (`index_tree`): median, p95 and max seconds and files
  parsed;
- the packs of those commits' changed source files: tokens (reviewflow's estimate) unbounded
  and under `--budget`, median and p95, changed symbols and references per file.
The machine's load average is recorded before and after: on a shared machine it says what else
was running.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from reviewflow.context.build import build_index, index_tree, list_sources  # noqa: E402
from reviewflow.context.languages import language_name  # noqa: E402
from reviewflow.context.pack import build_pack  # noqa: E402
from reviewflow.context.store import FILENAME, IndexStore  # noqa: E402
from reviewflow.git.models import ChangeSpec, DiffMode  # noqa: E402
from reviewflow.git.repo import collect_change  # noqa: E402
from reviewflow.git.runner import run_git  # noqa: E402
from reviewflow.git.snapshot import show_file  # noqa: E402
from reviewflow.review.tokens import estimate_tokens  # noqa: E402


def _child(repo: Path, store_dir: Path) -> None:
    """The full build, alone in its process (so its peak RSS is the build's)."""
    cpu0 = os.times()
    with IndexStore(store_dir) as store:
        stats = build_index(repo, "HEAD", store)
    cpu1 = os.times()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                **stats.model_dump(),
                "cpu_seconds": round(cpu1.user - cpu0.user + cpu1.system - cpu0.system, 2),
                "git_cpu_seconds": round(children.ru_utime + children.ru_stime, 2),
                "peak_rss_mb": round(_peak_rss_kb() / 1024, 1),
            }
        )
    )


def _peak_rss_kb() -> int:
    """This process's own peak RSS (VmHWM). Not `ru_maxrss`: Linux keeps that across exec, so a
    child started by a large parent would report the parent's size at the fork."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _full_build(repo: Path, store_dir: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(repo), str(store_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def _store_sizes(repo: Path, store_dir: Path) -> dict[str, Any]:
    files = list_sources(repo, "HEAD")
    keys = sorted({key for _, key in files.values()})
    started = time.monotonic()
    with IndexStore(store_dir) as store:
        records = store.load(keys)
    sqlite_load = time.monotonic() - started
    lines = "".join(f"{key}\t{records[key].to_json()}\n" for key in keys)
    started = time.monotonic()
    for line in lines.splitlines():
        key, _, text = line.partition("\t")
        records[key].from_json(text)
    jsonl_load = time.monotonic() - started
    definitions = sum(len(r.definitions) for r in records.values())
    references = sum(len(r.references) for r in records.values())
    return {
        "records": len(keys),
        "definitions": definitions,
        "references": references,
        "sqlite_mb": round((store_dir / FILENAME).stat().st_size / 2**20, 2),
        "jsonl_mb": round(len(lines.encode()) / 2**20, 2),
        "sqlite_load_seconds": round(sqlite_load, 3),
        "jsonl_load_seconds": round(jsonl_load, 3),
    }


def _history(repo: Path, count: int, scan: int = 3000) -> list[str]:
    """The newest `count` non-merge commits (any parent line: on git/git the first-parent
    line is release notes) that change a file the index reads, oldest first."""
    out = run_git(repo, ["rev-list", "--no-merges", f"-{scan}", "HEAD"])
    found: list[str] = []
    for commit in out.decode().split():
        names = run_git(repo, ["diff-tree", "--no-commit-id", "--name-only", "-r", commit])
        if any(language_name(name) for name in names.decode().splitlines()):
            found.append(commit)
            if len(found) == count:
                break
    return found[::-1]


def _updates(repo: Path, store_dir: Path, commits: list[str]) -> dict[str, Any]:
    """Each commit indexed with its parent already in the store: one commit's update."""
    with IndexStore(store_dir) as store:
        update, load, parsed = [], [], []
        for commit in commits:
            build_index(repo, f"{commit}~1", store)
            stats = build_index(repo, commit, store)
            update.append(stats.seconds)
            parsed.append(stats.parsed)
            started = time.monotonic()
            index_tree(repo, commit, store)
            load.append(time.monotonic() - started)
    return {
        "commits": len(commits),
        "update_seconds": _spread(update),
        "update_and_load_seconds": _spread(load),
        "parsed_per_commit": _spread(parsed),
    }


def _packs(repo: Path, store_dir: Path, commits: list[str], budget: int) -> dict[str, Any]:
    natural, bounded, symbols, references, seconds = [], [], [], [], []
    with IndexStore(store_dir) as store:
        for commit in commits:
            index = index_tree(repo, commit, store)
            change = collect_change(repo, ChangeSpec(DiffMode.COMMIT, commit=commit))
            for file in change.files:
                if file.path not in index.files and (file.old_path or file.path) not in index.files:
                    continue
                old = show_file(repo, f"{commit}~1", file.old_path or file.path)
                new = show_file(repo, commit, file.path)
                old_text = old.decode("utf-8", "replace") if old is not None else None
                new_text = new.decode("utf-8", "replace") if new is not None else None
                started = time.monotonic()
                full = build_pack(
                    file,
                    old_text,
                    new_text,
                    index,
                    budget_tokens=10**9,
                    count_tokens=estimate_tokens,
                )
                seconds.append(time.monotonic() - started)
                cut = build_pack(
                    file,
                    old_text,
                    new_text,
                    index,
                    budget_tokens=budget,
                    count_tokens=estimate_tokens,
                )
                natural.append(full.tokens)
                bounded.append(cut.tokens)
                symbols.append(len(full.changed_symbols))
                references.append(sum(len(s.references) + s.omitted for s in full.changed_symbols))
    return {
        "files": len(natural),
        "tokens_unbounded": _spread(natural),
        f"tokens_budget_{budget}": _spread(bounded),
        "over_budget_share": round(sum(n > budget for n in natural) / max(1, len(natural)), 3),
        "changed_symbols_per_file": _spread(symbols),
        "references_per_file": _spread(references),
        "pack_seconds": _spread(seconds),
    }


def _spread(values: list[float] | list[int]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": round(statistics.median(ordered), 3),
        "p95": round(p95, 3),
        "max": round(ordered[-1], 3),
    }


def bench(repo: Path, commits: int, budget: int) -> dict[str, Any]:
    head = run_git(repo, ["rev-parse", "HEAD"]).decode().strip()
    result: dict[str, Any] = {"repo": str(repo), "head": head, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="context-bench-") as tmp:
        result["full_build"] = _full_build(repo, Path(tmp, "full"))
        result["store"] = _store_sizes(repo, Path(tmp, "full"))
        history = _history(repo, commits)
        result["one_commit"] = _updates(repo, Path(tmp, "updates"), history)
        result["packs"] = _packs(repo, Path(tmp, "updates"), history, budget)
    result["load_after"] = os.getloadavg()
    return result


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--budget", type=int, default=1500)
    args = parser.parse_args()
    reviewflow = run_git(ROOT, ["rev-parse", "--short", "HEAD"]).decode().strip()
    print(json.dumps({"reviewflow": reviewflow, "cpus": os.cpu_count()}))
    for repo in args.repos:
        print(json.dumps(bench(repo.resolve(), args.commits, args.budget), indent=1), flush=True)


if __name__ == "__main__":
    main()
