"""Verification benchmark (`--verify`): does Chain-of-Verification remove false positives that a
tool read disproves, and keep every true finding? What does it cost per finding?

Findings: the placement bench's noisy candidates (`bench/placement.py`: 36 real defect lines in
6 files), placed and finalized as a review does, each given the claim of its defect's kind; plus
20 planted false positives in 5 more files of the same change, each disproved by what a read
shows: a division guarded before it, a handle closed in a `finally`, a helper defined in another
module, a read-modify-write under a lock.

The model is a scripted verifier that answers from what it reads (`bench/scripted_verifier.py`,
no model, no network): it asks its questions from the finding's claim, answers each by calling
the real read-only tools (`file_read`, `code_search`) and reading their output, and scores from
the answers alone. The verification code, prompts, tools, budget (4 context calls) and threshold
(0.75) are the real ones.

Targets: false positives removed >= 90%; true findings kept 100%. Also printed: requests and
prompt characters per finding (system + messages + tool calls + tool block, as prompt_size.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.placement import SEED, Truth, build, noisy_candidates
from bench.prompt_size import characters
from bench.scripted_verifier import KINDS, Verifier, step
from reviewflow.config import ReviewSettings
from reviewflow.errors import ProviderError
from reviewflow.findings import Finalized, finalize, group_candidates, relocate_file
from reviewflow.findings.models import Finding
from reviewflow.findings.verify import Verification, apply_verifications, verify
from reviewflow.git.models import ChangeSpec, DiffMode
from reviewflow.git.repo import collect_change
from reviewflow.models import Candidate
from reviewflow.providers import ModelRequest, ModelResponse
from reviewflow.review.reader import Snapshot

BUDGET = 4
THRESHOLD = ReviewSettings().confidence_threshold
PLANTED_FILES = 5

CODE_KINDS = (  # a placement truth's code -> its kind
    ("/ len(", "divide"),
    ("open(", "open"),
    ("SELECT", "sql"),
    ("[len(items)]", "index"),
    ("except Exception", "except"),
    ("current = self.count", "race"),
    ("md5", "md5"),
    ("overrides={}", "mutable"),
    ("yaml.load", "yaml"),
    ("+ size + 1", "slice"),
)

PLANTED = {  # kind -> (function text, the claimed lines within it: first, last)
    "divide": (
        "def fp{k}_mean(values):\n    if not values:\n        return 0.0\n"
        "    total = sum(values)\n    return total / len(values)\n",
        5,
        5,
    ),
    "open": (
        "def fp{k}_read(path):\n    handle = open(path)\n    try:\n        return handle.read()\n"
        "    finally:\n        handle.close()\n",
        2,
        2,
    ),
    "undefined": ("def fp{k}_clean(text):\n    return normalize_fp{k}(text.strip())\n", 2, 2),
    "race": (
        "class Fp{k}Counter:\n    def __init__(self):\n        self.lock = threading.Lock()\n"
        "        self.count = 0\n\n    def add(self):\n        with self.lock:\n"
        "            current = self.count\n            self.count = current + 1\n",
        8,
        9,
    ),
}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def plant(root: Path) -> list[tuple[str, Truth]]:
    """Commit PLANTED_FILES files of false-positive bait, one of each kind per file, and the
    helpers' module; the bait's kind and lines."""
    helpers = "".join(
        f"def normalize_fp{k}(text):\n    return text.lower()\n\n\n" for k in range(5)
    )
    (root / "src/fphelpers.py").write_text(helpers)
    baits: list[tuple[str, Truth]] = []
    for k in range(PLANTED_FILES):
        path = f"src/fp/checks{k}.py"
        text = f"import threading\n\nfrom src.fphelpers import normalize_fp{k}\n\n\n"
        for kind, (template, first, last) in PLANTED.items():
            at = text.count("\n") + 1
            block = template.format(k=k)
            code = "\n".join(block.split("\n")[first - 1 : last])
            baits.append((kind, Truth(path, at + first - 1, at + last - 1, code)))
            text += block + "\n\n"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "planted")
    return baits


def _candidate(kind: str, truth: Truth, line: int | None = None) -> Candidate:
    return Candidate(
        path=truth.path,
        file=truth.path,
        severity="high",
        category="correctness",
        title=KINDS[kind].claim,
        problem=f"{KINDS[kind].claim}: the code at this line goes wrong at run time.",
        evidence="The changed code shows it.",
        suggestion="Fix it.",
        existing_code=truth.code,
        start_line=truth.start if line is None else line,
        end_line=truth.end,
        confidence=0.9,
    )


def kind_of(code: str) -> str:
    return next(kind for needle, kind in CODE_KINDS if needle in code)


def refuse(request: ModelRequest) -> ModelResponse:
    raise ProviderError("no relocation in the verification benchmark")


def findings_of(root: Path) -> tuple[list[Finding], dict[str, str], Snapshot]:
    """The change's findings after placement and finalize, each finding's group (true,
    misplaced, planted) by fingerprint, and the snapshot the tools read."""
    rng = random.Random(SEED)
    _, truths = build(root)
    baits = plant(root)
    change = collect_change(root, ChangeSpec(DiffMode.RANGE, from_ref="HEAD~2", to_ref="HEAD"))
    files = {f.path: f for f in change.files}
    noisy, expected = noisy_candidates(files, truths, rng)
    claimed = [
        c.model_copy(update=_claim(kind_of(t.code))) for c in noisy if (t := expected[c.title])
    ]  # the ghost and context candidates (no truth) are dropped by placement anyway
    truth_of = {KINDS[kind_of(t.code)].claim + f"@{t.path}:{t.start}": t for t in truths}
    planted = [_candidate(kind, truth) for kind, truth in baits]
    groups, outside = group_candidates([*claimed, *planted], files)
    found = [relocate_file(files[path], group, refuse) for path, group in groups.items()]
    final = finalize(found, ReviewSettings(), outside)
    baited = {(t.path, t.start) for _, t in baits}
    group: dict[str, str] = {}
    for f in final.findings:
        if (f.path, f.start_line) in baited:
            group[f.fingerprint] = "planted"
        else:
            right = truth_of.get(f"{f.title}@{f.path}:{f.start_line}")
            group[f.fingerprint] = "true" if right and right.end == f.end_line else "wrong claim"
    head = _git(root, "rev-parse", "HEAD").strip()
    return list(final.findings), group, Snapshot(repo_root=str(root), ref=head)


def _claim(kind: str) -> dict[str, str]:
    claim = KINDS[kind].claim
    return {"title": claim, "problem": f"{claim}: the code at this line goes wrong at run time."}


def run(
    findings: list[Finding], snapshot: Snapshot, budget: int
) -> tuple[list[Verification], list[int], list[int], dict[str, int]]:
    """Each finding verified: results, requests and prompt characters per finding, and the
    characters of all findings by step."""
    results, requests, chars = [], [], []
    by_step = dict.fromkeys(("questions", "answers", "score"), 0)
    for finding in findings:
        model = Verifier()
        results.append(verify(finding, snapshot, budget, model))
        requests.append(len(model.sent))
        chars.append(sum(characters(r) for r in model.sent))
        for request in model.sent:
            by_step[step(request)] += characters(request)
    return results, requests, chars, by_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=BUDGET, help="context calls per finding")
    budget = parser.parse_args().budget
    with tempfile.TemporaryDirectory(prefix="rf-bench-verify-") as work:
        findings, group, snapshot = findings_of(Path(work) / "repo")
        started = time.perf_counter()
        results, requests, chars, by_step = run(findings, snapshot, budget)
        seconds = time.perf_counter() - started
    final = apply_verifications(Finalized(findings=tuple(findings)), results, THRESHOLD)
    kept = {f.fingerprint for f in final.findings}
    print(
        f"findings verified: {len(findings)}; budget {budget} context calls; threshold {THRESHOLD}"
    )
    for name, want in (("planted", "removed"), ("true", "kept"), ("wrong claim", "removed")):
        members = [f for f in findings if group[f.fingerprint] == name]
        hit = [f for f in members if (f.fingerprint in kept) == (want == "kept")]
        share = 100 * len(hit) / len(members) if members else 0.0
        print(f"{name:<11} {len(members):>3}  {want} {len(hit):>3} ({share:5.1f}%)")
    failed = [r for r in results if not r.complete]
    tools = [r.tool_calls for r in results]
    print(
        f"failed verifications: {len(failed)}; questions per finding: "
        f"{statistics.mean(len(r.questions) for r in results):.2f}; "
        "tool calls per finding (cache hits included): "
        f"mean {statistics.mean(tools):.2f}, max {max(tools)}"
    )
    print(
        f"requests per finding: mean {statistics.mean(requests):.2f}, "
        f"min {min(requests)}, max {max(requests)}"
    )
    print(
        f"prompt characters per finding: mean {statistics.mean(chars):,.0f}, "
        f"median {statistics.median(chars):,.0f}, max {max(chars):,}"
    )
    steps = ", ".join(f"{name} {total / len(findings):,.0f}" for name, total in by_step.items())
    print(f"prompt characters per finding by step: {steps}")
    print(f"verification time (scripted model, tools on git): {seconds:.2f} s")


if __name__ == "__main__":
    main()
