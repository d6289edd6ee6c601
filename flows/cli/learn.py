"""`reviewflow dismissed --suggest [--apply IDS]`: silencing rules learnt from dismissals,
printed for the team to read, and the accepted ones written into `.reviewflow/rules.json`
(no Prefect import: it stays instant)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from reviewflow.config import OutputSettings
from reviewflow.report.dismiss import dismisser
from reviewflow.report.learn import EXPIRY_DAYS, MIN_COUNT, Proposal, Suggestions, apply, suggest
from reviewflow.report.textsafe import for_terminal
from reviewflow.rules.loader import PROJECT_RULES

# `dismissed` options that go with --suggest only (one line, exit 2 without it)
SUGGEST_ONLY = ("--apply", "--report", "--min-count", "--expires-in")


def cmd_suggest(
    args: argparse.Namespace, root: Path, home: Path, output: OutputSettings | None = None
) -> int:
    today = datetime.now(UTC).date()
    reports = [Path(path) for path in args.report or ()]
    count = MIN_COUNT if args.min_count is None else args.min_count
    days = EXPIRY_DAYS if args.expires_in is None else args.expires_in
    found = suggest(root, home, today, min_count=count, days=days, reports=reports, output=output)
    if args.apply is not None:
        done = apply(root, found.proposals, args.apply, dismisser(root), today)
        _print_applied(done)
        return 0
    if args.json:
        sys.stdout.write(json.dumps(_record(found), indent=2, ensure_ascii=False) + "\n")
        return 0
    _print(found)
    return 0


def _record(found: Suggestions) -> dict[str, object]:
    return {
        "proposals": [p.record() for p in found.proposals],
        "unclassified": [e.id for e in found.unclassified],
        "covered": found.covered,
        "expired": [{"rule": r.name, "expires": r.expires} for r in found.expired],
        "unused": [
            {"rule": r.name, "reviews": u.reviews, "first": u.first, "last": u.last}
            for r, u in found.unused
        ],
    }


def _print(found: Suggestions) -> None:
    lines: list[str] = []
    for proposal in found.proposals:
        lines.extend(_proposal_lines(proposal))
    if found.proposals:
        ids = ",".join(p.id for p in found.proposals)
        lines.append(f"write them with: reviewflow dismissed --suggest --apply {ids} (or all)")
    else:
        lines.append("no silencing rule to propose")
    if found.covered:
        lines.append(f"{found.covered} dismissal(s) already covered by a rule of {PROJECT_RULES}")
    if found.unclassified:
        ids = ", ".join(e.id for e in found.unclassified)
        lines.append(
            f"not learnt from (no category known: their findings are in no report of the home "
            f"and the dismissal does not say): {ids}"
        )
    for rule in found.expired:
        lines.append(f"{rule.name} ({rule.target}) expired on {rule.expires}: renew or remove it")
    for rule, seen in found.unused:
        lines.append(
            f"{rule.name} ({rule.target}) silenced nothing in {seen.reviews} review(s) on this "
            f"machine ({seen.first} to {seen.last})"
        )
    sys.stdout.write("".join(for_terminal(line) + "\n" for line in lines))


def _proposal_lines(proposal: Proposal) -> list[str]:
    head = (
        f"{proposal.id}  silence {proposal.target} until {proposal.expires} "
        f"({len(proposal.support)} dismissals)"
    )
    out = [head]
    for e in proposal.support:
        who = f" by {e.by}" if e.by else ""
        when = f" on {e.at}" if e.at else ""
        why = f": {e.reason}" if e.reason else ""
        out.append(f"    {e.id} {e.path}{who}{when}{why}  [{e.where}]")
    return out


def _print_applied(done: list[Proposal]) -> None:
    if not done:
        sys.stdout.write("no silencing rule to write: the dismissals support no proposal now\n")
        return
    lines = [
        f"added {len(done)} silencing rule(s) to {PROJECT_RULES} (review the change and commit it):"
    ]
    lines.extend(f"  {p.id} {p.target} until {p.expires}" for p in done)
    sys.stdout.write("".join(for_terminal(line) + "\n" for line in lines))
