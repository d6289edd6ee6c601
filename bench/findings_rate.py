"""How many findings real review tools make per file a pull request touches: the calibration of
the cost estimate's findings rates (`reviewflow/cost/estimate.py`: `FINDINGS_PER_CHANGED_LINE`,
`HIGH_FINDINGS_PER_CHANGED_LINE`, `MAX_FINDINGS_PER_FILE`).

Input: a checkout of withmartian/code-review-benchmark (MIT). Its offline results hold, for the
50 pull requests of its golden set, each review tool's comments (`results/<judge>/candidates.json`:
`{pr_url: {tool: [comment, ...]}}`) and each pull request's touched files
(`results/pr_labels.json`: `derived.num_files_touched`). Every (pull request, tool) pair is one
review; its comments divided by the files it touched is one sample. The benchmark records no diff
sizes, so the estimate turns these per-file figures into per-line rates at 30 changed lines per
touched file (stated beside the constants).

    python bench/findings_rate.py path/to/code-review-benchmark [--judge openai_gpt-5.2]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def samples(checkout: Path, judge: str) -> tuple[list[float], int, int]:
    """Comments per touched file of every (pull request, tool) review, the pull requests and
    the tools."""
    results = checkout / "offline" / "results"
    labels = json.loads((results / "pr_labels.json").read_text())
    candidates = json.loads((results / judge / "candidates.json").read_text())
    rates, tools = [], set()
    for url, by_tool in candidates.items():
        touched = labels[url]["derived"]["num_files_touched"]
        for tool, comments in by_tool.items():
            tools.add(tool)
            rates.append(len(comments) / touched)
    return rates, len(candidates), len(tools)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("checkout", type=Path, help="a checkout of code-review-benchmark")
    parser.add_argument("--judge", default="openai_gpt-5.2", help="results/<judge> to read")
    args = parser.parse_args()
    rates, prs, tools = samples(args.checkout, args.judge)
    print(f"{len(rates)} reviews: {tools} tools on {prs} pull requests ({args.judge})")
    print(f"comments per touched file: mean {statistics.mean(rates):.2f}")
    for share in (0.5, 0.75, 0.9, 0.99):
        print(f"  {share:.0%} of reviews at most {percentile(rates, share):.2f}")


if __name__ == "__main__":
    main()
