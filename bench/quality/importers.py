"""Build a case list from a benchmark's own published files.

    python bench/quality/importers.py martian GOLDEN_DIR --commit SHA [--out PATH]
    python bench/quality/importers.py swr DATASET.jsonl [--sample 20] [--seed 0] [--out PATH]

`martian`: withmartian/code-review-benchmark's `offline/golden_comments/*.json` (a list of
`{pr_title, url, original_url?, comments: [{comment, severity, category?}]}` per file; MIT).
The commits of each pull request are not in those files: the harness asks GitHub for the pull
request's base and head when it fetches (the benchmark's own step 0 does the same).

`swr`: SWR-Bench's `data/swr_datasets_d5c5.jsonl` (one PR per line: `repo`, `instance_id`,
`base_commit`, `pr_commits[{sha, date, diff[{file, patch}]}]`, `changes[{change_type,
change_introducing{code_snippet, commit_sha}, change_discussion{discussion_summary,
original_reviewer_comment}}]`; MIT). A sample keeps half changed and half clean PRs. A golden
change's file and line come from its introducing code snippet (a path line, then a hunk).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.quality.cases import NAMED, QualityError, case_id_from_pull_url
from reviewflow.fsutil import write_output

MARTIAN_SOURCE = {
    "benchmark": "withmartian/code-review-benchmark, offline set",
    "url": "https://github.com/withmartian/code-review-benchmark",
    "files": "offline/golden_comments/*.json",
    "licence": "MIT",
}
SWR_SOURCE = {
    "benchmark": "SWR-Bench (SWRBench)",
    "url": "https://github.com/ZZR0/SWRench",
    "files": "data/swr_datasets_d5c5.jsonl",
    "paper": "arXiv:2509.01494",
    "licence": "MIT",
}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def martian_cases(golden_dir: Path, commit: str) -> dict[str, Any]:
    """The case list of every `*.json` in `golden_dir`, in file then entry order."""
    files = sorted(golden_dir.glob("*.json"))
    if not files:
        raise QualityError(f"{golden_dir}: no golden comment files (*.json)")
    cases = []
    for path in files:
        for entry in json.loads(path.read_text(encoding="utf-8")):
            repo, case_id, number = case_id_from_pull_url(entry["url"])
            golden = [
                {k: c[k] for k in ("comment", "severity", "category") if c.get(k) is not None}
                for c in entry["comments"]
            ]
            case: dict[str, Any] = {"id": case_id, "title": entry.get("pr_title", "")}
            case |= {"repo": repo, "pull": number, "url": entry["url"]}
            if entry.get("original_url"):
                case["original_url"] = entry["original_url"]
            case |= {"base": None, "head": None, "source_file": path.name, "golden": golden}
            cases.append(case)
    comments = sum(len(c["golden"]) for c in cases)
    source = MARTIAN_SOURCE | {"commit": commit, "prs": len(cases), "golden_comments": comments}
    source["golden_sha256"] = golden_digest(files)
    return {"name": "martian", "source": source, "cases": cases}


def golden_digest(files: list[Path]) -> str:
    """The benchmark's own identifier of a golden set (its `analysis/golden_version.py`): a
    SHA-256 over each file's name and canonical JSON, in file name order."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = json.loads(path.read_text(encoding="utf-8"))
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest.update(f"{path.name}\0{canonical}\0".encode())
    return digest.hexdigest()


def swr_cases(dataset: Path, sample: int, seed: int) -> dict[str, Any]:
    """A seeded sample of SWR-Bench: `sample // 2` changed PRs and the rest clean."""
    records = [json.loads(line) for line in dataset.read_text("utf-8").splitlines() if line]
    changed = sorted((r for r in records if r.get("changes")), key=lambda r: r["instance_id"])
    clean = sorted((r for r in records if not r.get("changes")), key=lambda r: r["instance_id"])
    rng = random.Random(seed)
    picked = rng.sample(changed, min(len(changed), sample // 2))
    picked += rng.sample(clean, min(len(clean), sample - len(picked)))
    cases = [swr_case(record) for record in sorted(picked, key=lambda r: r["instance_id"])]
    source = SWR_SOURCE | {"sample": len(cases), "seed": seed, "of": len(records)}
    return {"name": "swr", "source": source, "cases": cases}


def swr_case(record: dict[str, Any]) -> dict[str, Any]:
    """One SWR-Bench record as a case: base_commit..the PR's last commit."""
    commits = record["pr_commits"]
    if all(c.get("date") for c in commits):
        commits = sorted(commits, key=lambda c: c["date"])
    files = {part["file"] for c in commits for part in c.get("diff", [])}
    golden = []
    for change in record.get("changes", []):
        discussion = change.get("change_discussion") or {}
        snippet = (change.get("change_introducing") or {}).get("code_snippet", "")
        path, line = snippet_location(snippet, files)
        text = discussion.get("discussion_summary") or discussion.get("original_reviewer_comment")
        golden.append(
            {"comment": text, "category": change.get("change_type"), "file": path, "line": line}
        )
    return {
        "id": record["instance_id"],
        "title": record.get("pr_title", ""),
        "repo": f"https://github.com/{record['repo']}",
        "base": record["base_commit"],
        "head": commits[-1]["sha"],
        "golden": golden,
    }


def snippet_location(snippet: str, files: set[str]) -> tuple[str | None, int | None]:
    """The file a change snippet starts with (when it is one of the PR's files) and the new-side
    line of its first added line (or of its hunk when nothing is added)."""
    lines = snippet.splitlines()
    path = lines[0].strip() if lines and lines[0].strip() in files else None
    line: int | None = None
    for n, text in enumerate(lines):
        match = _HUNK.match(text)
        if match is None:
            continue
        line = new = int(match.group(1))
        for body in lines[n + 1 :]:
            if body.startswith("+"):
                line = new
                break
            if not body.startswith("-"):
                new += 1
        break
    return path, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="dataset", required=True)
    martian = sub.add_parser("martian", help="from offline/golden_comments/")
    martian.add_argument("golden_dir", type=Path)
    martian.add_argument("--commit", required=True, help="the upstream commit the files are from")
    martian.add_argument("--out", type=Path, default=NAMED["martian"])
    swr = sub.add_parser("swr", help="from data/swr_datasets_d5c5.jsonl")
    swr.add_argument("dataset_file", type=Path)
    swr.add_argument("--sample", type=int, default=20)
    swr.add_argument("--seed", type=int, default=0)
    swr.add_argument("--out", type=Path, default=NAMED["swr"])
    args = parser.parse_args(argv)
    try:
        if args.dataset == "martian":
            data = martian_cases(args.golden_dir, args.commit)
        else:
            data = swr_cases(args.dataset_file, args.sample, args.seed)
    except (OSError, ValueError, KeyError, QualityError) as exc:
        print(f"importers: {exc}", file=sys.stderr)
        return 2
    write_output(args.out, json.dumps(data, indent=2, ensure_ascii=False) + "\n", 0o644)
    print(f"{args.out}: {len(data['cases'])} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
