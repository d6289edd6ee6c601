"""Recall and precision of the code index's uses against a reference tool that is not ours:
jedi for Python, cscope for C, on real commits that change a function used elsewhere.

    python bench/context_recall.py python CLONE --commits 40 [--jedi DIR]
    python bench/context_recall.py c CLONE --commits 40

CLONE is a throwaway clone: it is checked out at each commit (the tools read the work tree).
Walking non-merge history back from HEAD, each commit whose change edits or deletes a
function (of a modified file) that the reference tool finds used elsewhere counts, up to
`--commits` commits and `--per-commit` functions each. For each such function:
- reference uses: jedi's `get_references` (not definitions), or cscope's callers (`-3`);
  the function's own lines are left out on both sides;
- ours: `CodeIndex.references(name, defined_in=file, linked_only=True)`, and the confirmed
  ones alone;
- recall: reference uses ours also lists; precision: our uses the tool confirms (for C, any
  use cscope sees, `-0`); pack: the function's context pack (`--budget`) lists one use at least.
A deleted function still used is checked on the old side's uses in files the commit leaves
unchanged: its pack must show it (100%).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from reviewflow.context.build import index_tree  # noqa: E402
from reviewflow.context.changes import Changed, changed_symbols  # noqa: E402
from reviewflow.context.languages import language_name  # noqa: E402
from reviewflow.context.pack import build_pack  # noqa: E402
from reviewflow.context.parse import parse_source  # noqa: E402
from reviewflow.context.query import CodeIndex  # noqa: E402
from reviewflow.context.store import IndexStore  # noqa: E402
from reviewflow.git.models import ChangeSpec, DiffMode, FileDiff, FileStatus  # noqa: E402
from reviewflow.git.repo import collect_change  # noqa: E402
from reviewflow.git.runner import run_git  # noqa: E402
from reviewflow.git.snapshot import show_file  # noqa: E402
from reviewflow.review.tokens import estimate_tokens  # noqa: E402

Uses = set[tuple[str, int]]


class Jedi:
    def __init__(self, repo: Path) -> None:
        import jedi

        self.jedi = jedi
        self.repo = repo
        self.project = jedi.Project(repo)

    def refresh(self) -> None:
        self.project = self.jedi.Project(self.repo)

    def uses(self, path: str, line: int, name: str) -> tuple[Uses, Uses]:
        text = (self.repo / path).read_text(encoding="utf-8", errors="replace").splitlines()
        column = text[line - 1].find(name) if line <= len(text) else -1
        if column < 0:
            return set(), set()
        script = self.jedi.Script(path=str(self.repo / path), project=self.project)
        found: Uses = set()
        for ref in script.get_references(line, column, scope="project"):
            if ref.module_path is None or ref.is_definition():
                continue
            try:
                rel = Path(ref.module_path).resolve().relative_to(self.repo.resolve())
            except ValueError:
                continue
            found.add((str(rel), ref.line))
        return found, found


class Cscope:
    def __init__(self, repo: Path) -> None:
        self.repo = repo

    def refresh(self) -> None:
        for name in ("cscope.out", "cscope.in.out", "cscope.po.out"):
            (self.repo / name).unlink(missing_ok=True)
        subprocess.run(["cscope", "-b", "-q", "-k", "-R"], cwd=self.repo, check=True)

    def _query(self, mode: str, name: str) -> Uses:
        out = subprocess.run(
            ["cscope", "-d", "-L", f"-{mode}", name], cwd=self.repo, capture_output=True, text=True
        ).stdout
        found: Uses = set()
        for row in out.splitlines():
            parts = row.split(" ", 3)
            if len(parts) >= 3 and parts[2].isdigit():
                found.add((parts[0].removeprefix("./"), int(parts[2])))
        return found

    def uses(self, path: str, line: int, name: str) -> tuple[Uses, Uses]:
        """(call sites, every use cscope sees)."""
        return self._query("3", name), self._query("0", name)


def _candidates(repo: Path, language: str, scan: int) -> Iterator[tuple[str, FileDiff]]:
    out = run_git(repo, ["rev-list", "--no-merges", f"-{scan}", "HEAD"])
    for commit in out.decode().split():
        change = collect_change(repo, ChangeSpec(DiffMode.COMMIT, commit=commit))
        for file in change.files:
            wanted = {"python": ("python",), "c": ("c",)}[language]
            if file.status in (FileStatus.MODIFIED, FileStatus.DELETED) and (
                language_name(file.path) in wanted
            ):
                yield commit, file


def _text(repo: Path, ref: str, path: str) -> str | None:
    blob = show_file(repo, ref, path)
    return blob.decode("utf-8", "replace") if blob is not None else None


def _ours(index: CodeIndex, name: str, path: str, span: range) -> tuple[Uses, Uses]:
    hits = index.references(name, path, linked_only=True)
    mine = {
        (h.path, h.reference.line)
        for h in hits
        if not (h.path == path and h.reference.line in span)
    }
    sure = {
        (h.path, h.reference.line)
        for h in hits
        if h.link == "confirmed" and not (h.path == path and h.reference.line in span)
    }
    return mine, sure


@dataclass
class Tally:
    reference: int = 0
    found: int = 0
    ours: int = 0
    ours_confirmed: int = 0
    ours_right: int = 0
    confirmed_right: int = 0
    functions: int = 0
    packed: int = 0
    deleted: int = 0
    deleted_shown: int = 0

    def record(self, language: str, repo: Path, commits: int, seconds: float) -> dict[str, Any]:
        return {
            "language": language,
            "repo": str(repo),
            "commits": commits,
            "functions": self.functions,
            "reference_uses": self.reference,
            "recall": round(self.found / max(1, self.reference), 3),
            "precision_linked": round(self.ours_right / max(1, self.ours), 3),
            "precision_confirmed": round(self.confirmed_right / max(1, self.ours_confirmed), 3),
            "our_uses": self.ours,
            "our_confirmed_uses": self.ours_confirmed,
            "packs_with_a_use": round(self.packed / max(1, self.functions), 3),
            "deleted_still_used": self.deleted,
            "deleted_shown": self.deleted_shown,
            "seconds": round(seconds, 1),
        }


def measure(
    language: str, repo: Path, commits: int, per_commit: int, budget: int, scan: int
) -> dict[str, Any]:
    tool = Jedi(repo) if language == "python" else Cscope(repo)
    tally = Tally()
    counted: list[str] = []
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="context-recall-") as tmp,
        IndexStore(Path(tmp)) as store,
    ):
        current, index = "", None
        for commit, file in _candidates(repo, language, scan):
            if len(counted) >= commits and commit not in counted:
                break
            if commit != current:
                _checkout(repo, commit)
                tool.refresh()
                index, current = index_tree(repo, commit, store), commit
            assert index is not None
            scored = _file(repo, commit, file, index, tool, tally, language, per_commit, budget)
            if scored and commit not in counted:
                counted.append(commit)
    return tally.record(language, repo, len(counted), time.monotonic() - started)


def _checkout(repo: Path, ref: str) -> None:
    subprocess.run(["git", "checkout", "-q", "--detach", "-f", ref], cwd=repo, check=True)


def _file(
    repo: Path,
    commit: str,
    file: FileDiff,
    index: CodeIndex,
    tool: Jedi | Cscope,
    tally: Tally,
    language: str,
    per_commit: int,
    budget: int,
) -> bool:
    """Score the changed functions of one file; whether one of them counted."""
    texts = (
        _text(repo, f"{commit}~1", file.path),
        _text(repo, commit, file.path) if file.status != FileStatus.DELETED else None,
    )
    lang = language_name(file.path) or language
    old, new = (parse_source(t.encode(), lang) if t else None for t in texts)
    changes = [
        c
        for c in changed_symbols(file, old, new, *texts)
        if c.definition.kind in ("function", "method") and c.change in ("edited", "deleted")
    ][:per_commit]
    counted = False
    for changed in changes:
        if changed.change == "edited":  # deleted ones: below, on the old side
            counted |= _function(file, changed, texts, index, tool, tally, budget)
    found, shown = _deleted(repo, commit, file, changes, texts, index, budget, tool)
    tally.deleted += found
    tally.deleted_shown += shown
    return counted


def _function(
    file: FileDiff,
    changed: Changed,
    texts: tuple[str | None, str | None],
    index: CodeIndex,
    tool: Jedi | Cscope,
    tally: Tally,
    budget: int,
) -> bool:
    """Score one edited function against the tool; False when the tool finds no use."""
    d = changed.definition
    span = range(d.line, d.end_line + 1)
    calls, every = tool.uses(file.path, d.line, d.name)
    calls = {u for u in calls if not (u[0] == file.path and u[1] in span)}
    if not calls:
        return False
    mine, sure = _ours(index, d.name, file.path, span)
    every = every | calls
    tally.reference += len(calls)
    tally.found += len(calls & mine)
    tally.ours += len(mine)
    tally.ours_confirmed += len(sure)
    tally.ours_right += len(mine & every)
    tally.confirmed_right += len(sure & every)
    tally.functions += 1
    print(
        f"{file.path} {d.name}: reference {len(calls)}, ours {len(mine)}, both {len(calls & mine)}",
        file=sys.stderr,
        flush=True,
    )
    pack = build_pack(file, *texts, index, budget_tokens=budget, count_tokens=estimate_tokens)
    tally.packed += any(s.name == d.name and s.references for s in pack.changed_symbols)
    return True


def _deleted(
    repo: Path,
    commit: str,
    file: FileDiff,
    changes: list[Changed],
    texts: tuple[str | None, str | None],
    index: CodeIndex,
    budget: int,
    tool: Jedi | Cscope,
) -> tuple[int, int]:
    """Deleted functions the old side used in files this commit leaves alone: still used."""
    gone = [c for c in changes if c.change == "deleted"]
    if not gone:
        return 0, 0
    names = ["diff", "--name-only", "--no-renames", f"{commit}~1", commit]
    touched = set(run_git(repo, names).decode().split())
    _checkout(repo, f"{commit}~1")
    tool.refresh()
    still = []
    for c in gone:
        d = c.definition
        calls, _ = tool.uses(file.old_path or file.path, d.line, d.name)
        if any(path not in touched for path, _ in calls):
            still.append(d.name)
    _checkout(repo, commit)
    tool.refresh()
    if not still:
        return 0, 0
    pack = build_pack(file, *texts, index, budget_tokens=budget, count_tokens=estimate_tokens)
    shown = {
        s.name for s in pack.changed_symbols if s.change in ("deleted", "renamed") and s.references
    }
    shown |= {s.old_name for s in pack.changed_symbols if s.old_name and s.references}
    return len(still), sum(name in shown for name in still)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("language", choices=("python", "c"))
    parser.add_argument("repo", type=Path)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--per-commit", type=int, default=3)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--scan", type=int, default=600, help="commits looked at, at most")
    parser.add_argument("--jedi", type=Path, help="a directory jedi is installed in")
    args = parser.parse_args()
    if args.jedi:
        sys.path.insert(0, str(args.jedi))
    result = measure(
        args.language, args.repo.resolve(), args.commits, args.per_commit, args.budget, args.scan
    )
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
