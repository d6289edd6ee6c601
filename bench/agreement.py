"""Agreement across independent passes (issue 41, `review.passes`, `review.min_agreement`).

Three figures:

1. Precision and recall for passes 1-3 and k 1-3, measured beside the expected curve. A
   scripted model per pass finds each of D planted defects with probability r and adds F false
   positives picked at random among M places the change offers (so a false positive comes back
   in another pass with probability q = F/M, independently). Every pass words a finding its own
   way (a paraphrase of the title, lines shifted by up to one), so the clustering of
   `reviewflow.findings.agreement` has to join them; the real `agree` keeps and drops. Expected:
   recall = P(Binomial(n, r) >= k), false positives kept = M * P(Binomial(n, q) >= k), precision
   = D*recall / (D*recall + that). Seeded Monte Carlo, `--trials` reviews per cell.
2. Cost and wall per pass count: whole reviews through the CLI (the managed Prefect server, a
   scripted model on the wire server answering after `--latency` seconds, review.concurrency 4)
   of a 6-file change, with 1, 2 and 3 passes: requests, tokens, wall; then the same review
   again, which must cost 0 requests.
3. The clustering's accuracy on the hand-labelled pairs of tests/data/agreement/pairs.json.

    python bench/agreement.py [--trials 400] [--latency 0.2] [--no-reviews]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reviewflow.config import ReviewSettings
from reviewflow.findings.agreement import agree
from reviewflow.findings.finalize import Finalized, fingerprint
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.models import Category, Severity

SEED = 41
DEFECTS, RECALL = 10, 0.8  # D planted defects, each found by a pass with probability r
NOISE_PER_PASS, PLACES = 4, 40  # F false positives a pass adds among M places: q = 0.1
# Each planted defect as three passes might word it (the first is also its code's topic).
DEFECT_TITLES = (
    ("Division by zero on an empty list", "average() raises ZeroDivisionError when empty",
     "Empty input divides by zero"),
    ("File handle never closed", "Resource leak: open() without with", "Handle leaks on error"),
    ("SQL injection in find_user", "User input interpolated into SQL",
     "Unparameterized SQL query in find_user"),
    ("Off-by-one in last_item", "last_item indexes one past the end",
     "Index out of range in last_item"),
    ("Race on the shared counter", "Counter increment is not atomic",
     "Unsynchronized read-modify-write of counter"),
    ("Token expiry never checked", "Expired tokens are accepted", "Missing expiry check on token"),
    ("Timeout ignored by fetch", "fetch drops the timeout argument",
     "Timeout parameter never passed to fetch"),
    ("Mutable default argument overrides", "overrides={} shared between calls",
     "Default dict argument is shared"),
    ("Exception swallowed in save", "save catches Exception and drops it",
     "Errors silently ignored in save"),
    ("Unbounded retry loop in connect", "connect retries forever",
     "No retry limit in connect loop"),
)  # fmt: skip
NOISE_TOPICS = (
    "Variable name is unclear", "Consider caching this lookup", "Magic number in loop",
    "Possible None dereference", "Logging may leak data", "Inefficient string concatenation",
    "Missing type check on input", "Redundant copy of list",
)  # fmt: skip
CATEGORIES = (Category.CORRECTNESS, Category.SECURITY, Category.PERFORMANCE)


def finding(path: str, lines: tuple[int, int], category: Category, title: str) -> Finding:
    digest = fingerprint(path, f"{title} {lines}", category)
    return Finding(
        id=f"F{digest[:12]}",
        fingerprint=digest,
        severity=Severity.MEDIUM,
        category=category,
        path=path,
        start_line=lines[0],
        end_line=lines[1],
        title=title,
        problem=title,
        confidence=0.8,
        existing_code=title,
        placed_by=PlacedBy.EXACT,
    )


def one_pass(rng: random.Random, truth: dict[str, int | None]) -> Finalized:
    """One scripted pass: the defects it finds and its false positives, worded its own way and
    placed a line off or not (spans of three lines: a pass's span always meets another's);
    `truth` learns each finding's ID -> its planted defect's number, None for noise."""
    found = []
    for n, titles in enumerate(DEFECT_TITLES[:DEFECTS]):
        if rng.random() < RECALL:
            line = 10 + 10 * n + rng.choice((-1, 0, 1))
            lines = (line - 1, line + 1)
            made = finding("app/core.py", lines, CATEGORIES[n % 3], rng.choice(titles))
            truth[made.id] = n
            found.append(made)
    for place in rng.sample(range(PLACES), NOISE_PER_PASS):
        path = f"app/module_{place // 10}.py"
        line = 10 + 10 * (place % 10) + rng.choice((-1, 0, 1))
        topic = NOISE_TOPICS[place % len(NOISE_TOPICS)]
        title = rng.choice((topic, f"{topic} here", f"Nit: {topic.lower()}"))
        made = finding(path, (line - 1, line + 1), CATEGORIES[place % 3], title)
        truth[made.id] = None
        found.append(made)
    return Finalized(findings=tuple(found))


def tail(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def precision_recall(trials: int) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    rows = []
    q = NOISE_PER_PASS / PLACES
    for passes in (1, 2, 3):
        # k -> [defects kept, findings kept that are defects, false positives kept]
        counts = {k: [0, 0, 0] for k in range(1, passes + 1)}
        for _ in range(trials):
            truth: dict[str, int | None] = {}
            per_pass = [one_pass(rng, truth) for _ in range(passes)]
            for k in counts:
                if passes == 1:
                    kept = per_pass[0].findings
                else:
                    kept = agree(per_pass, ReviewSettings(passes=passes, min_agreement=k)).findings
                defects = [truth[f.id] for f in kept if truth[f.id] is not None]
                counts[k][0] += len(set(defects))
                counts[k][1] += len(defects)
                counts[k][2] += len(kept) - len(defects)
        for k, (caught, true, false) in counts.items():
            recall_e, noise_e = tail(passes, k, RECALL), PLACES * tail(passes, k, q)
            rows.append(
                {
                    "passes": passes,
                    "k": k,
                    "precision": true / (true + false) if true + false else 0.0,
                    "recall": caught / (DEFECTS * trials),
                    "split": (true - caught) / trials,  # a defect kept twice: a false split
                    "false_kept": false / trials,
                    "precision_expected": DEFECTS * recall_e / (DEFECTS * recall_e + noise_e),
                    "recall_expected": recall_e,
                    "false_expected": noise_e,
                }
            )
    return rows


def clustering_accuracy() -> dict[str, int]:
    from tests.findings.test_agreement import judged, labelled_cases

    pairs = [pair for case in labelled_cases() for pair in judged(case)]
    return {
        "pairs": len(pairs),
        "same": sum(label for label, _ in pairs),
        "right": sum(label == got for label, got in pairs),
        "false_joins": sum(got and not label for label, got in pairs),
        "false_splits": sum(label and not got for label, got in pairs),
    }


FILES = 6
CODE = "def f{n}(items, path):\n    total = sum(items) / len(items)\n    return total, open(path)\n"


def review_costs(latency: float) -> list[dict[str, Any]]:
    """Whole reviews of a 6-file change with 1, 2 and 3 passes, then each again."""
    from flows.cli.main import main as cli
    from flows.local.control import stop_server
    from tests.flows.reviewer import ScriptedReviewer
    from tests.gitutil import GitRepo
    from tests.wire_server import TEST_KEY, Delay, RecordedRequest, Reply, WireServer

    work = Path(tempfile.mkdtemp(prefix="rf-bench-agreement-"))
    home = work / "home"
    os.environ["REVIEWFLOW_HOME"] = str(home)
    repo = GitRepo.init(work / "repo")
    paths = [f"app/m{n}.py" for n in range(FILES)]
    for n, path in enumerate(paths):
        repo.write(path, f"def f{n}(items, path):\n    return None\n")
    repo.commit("base")
    for n, path in enumerate(paths):
        repo.write(path, CODE.format(n=n))
    repo.commit("change")
    planted = {
        path: [
            {
                "severity": "high",
                "category": "correctness",
                "file": path,
                "existing_code": "    total = sum(items) / len(items)",
                "title": "Division by zero on an empty list",
                "problem": "len(items) is 0 for an empty list",
                "evidence": "no guard",
                "suggestion": "return 0 for an empty list",
                "confidence": 0.9,
            }
        ]
        for path in paths
    }
    scripted = ScriptedReviewer(planted)

    def slow(record: RecordedRequest) -> Reply:
        return Delay(latency, scripted(record))

    rows = []
    try:
        for passes in (1, 1, 2, 3):  # the first: an untimed warm-up (the server's start)
            with WireServer() as wire:  # one endpoint (it is in the cache keys) for both runs
                wire.respond("openai", slow)
                os.environ.update(
                    {
                        "REVIEWFLOW_MODEL_NAME": "gpt-4o-mini",
                        "REVIEWFLOW_MODEL_ENDPOINT": wire.base_url("openai"),
                        "REVIEWFLOW_MODEL_API_KEY": TEST_KEY,
                    }
                )
                for again in (False, True):
                    out = work / f"out-{len(rows)}"
                    args = ["review", "--repo", str(repo.root), "--commit", "HEAD"]
                    args += ["--no-warm", "--console", "off", "--no-progress"]
                    args += ["--report-dir", str(out), "--passes", str(passes)]
                    args += [] if again else ["--no-cache"]
                    before = len(wire.requests())
                    start = time.perf_counter()
                    code = cli(args)
                    wall = time.perf_counter() - start
                    sent = len(wire.requests()) - before
                    report = json.loads((out / "review-report.json").read_text())
                    assert code in (0, 1) and report["usage"]["requests"] == sent
                    rows.append(
                        {
                            "passes": passes,
                            "again": again,
                            "requests": sent,
                            "estimate_requests": report["estimate"]["requests"],
                            "wall_s": wall,
                            "findings": len(report["findings"]),
                            "agreement": sorted(
                                {f.get("agreement") or "-" for f in report["findings"]}
                            ),
                        }
                    )
    finally:
        stop_server(home)
    return rows[2:]  # without the warm-up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--no-reviews", action="store_true", help="skip the whole reviews")
    args = parser.parse_args()

    print(
        f"1. D={DEFECTS} defects, per-pass recall r={RECALL}, F={NOISE_PER_PASS} false positives "
        f"per pass among M={PLACES} places (q={NOISE_PER_PASS / PLACES}), {args.trials} trials"
    )
    print(
        "| passes | k | precision (expected) | recall (expected) | false positives kept per "
        "review (expected) | defects kept twice per review |"
    )
    print("|---|---|---|---|---|---|")
    for row in precision_recall(args.trials):
        print(
            f"| {row['passes']} | {row['k']} | {row['precision']:.3f} "
            f"({row['precision_expected']:.3f}) | {row['recall']:.3f} "
            f"({row['recall_expected']:.3f}) | {row['false_kept']:.2f} "
            f"({row['false_expected']:.2f}) | {row['split']:.2f} |"
        )
    acc = clustering_accuracy()
    print(
        f"3. clustering: {acc['right']}/{acc['pairs']} labelled pairs right "
        f"({acc['same']} same), {acc['false_joins']} false joins, "
        f"{acc['false_splits']} false splits"
    )
    if args.no_reviews:
        return
    print(f"2. {FILES}-file change, scripted model answering in {args.latency} s, concurrency 4")
    print("| passes | run | requests | estimate (requests) | wall (s) | findings (agreement) |")
    print("|---|---|---|---|---|---|")
    for row in review_costs(args.latency):
        print(
            f"| {row['passes']} | {'unchanged again' if row['again'] else 'first'} | "
            f"{row['requests']} | {row['estimate_requests']:.1f} | {row['wall_s']:.1f} | "
            f"{row['findings']} ({', '.join(row['agreement'])}) |"
        )


if __name__ == "__main__":
    main()
