"""`reviewflow dismiss` and `reviewflow dismissed` (no Prefect import: they stay instant);
`dismissed --suggest` is `flows.cli.learn`'s."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from flows.cli.learn import SUGGEST_ONLY, cmd_suggest
from reviewflow.config import home_dir, load_config
from reviewflow.errors import ConfigError
from reviewflow.git.repo import find_repo_root
from reviewflow.report.dismiss import Listed, dismiss, listed, undo
from reviewflow.report.textsafe import for_terminal


def cmd_dismiss(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    root, home = find_repo_root(Path(args.repo)), home_dir(env)
    if args.undo:
        gone = undo(root, home, args.finding, local=args.local)
        sys.stdout.write(
            for_terminal(f"removed the dismissal of {_what(gone)} from {_where(gone, root)}") + "\n"
        )
        return 0
    report = Path(args.report) if args.report else None
    output = load_config(home, env).output  # an ID is looked up where reviews write reports
    done = dismiss(
        root, home, args.finding, reason=args.reason, local=args.local, report=report, output=output
    )
    share = "" if done.local else " (commit it to share the dismissal)"
    sys.stdout.write(for_terminal(f"dismissed {_what(done)} in {_where(done, root)}{share}") + "\n")
    return 0


def cmd_dismissed(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    root = find_repo_root(Path(args.repo))
    if args.suggest:
        home = home_dir(env)
        return cmd_suggest(args, root, home, load_config(home, env).output)
    given = [n for n in SUGGEST_ONLY if getattr(args, n[2:].replace("-", "_")) is not None]
    if given:
        example = "--suggest --apply IDS" if given[0] == "--apply" else "--suggest"
        raise ConfigError(f"{given[0]} goes with --suggest (reviewflow dismissed {example})")
    items = listed(root, home_dir(env))
    if args.json:
        records = [
            {
                **item.entry.model_dump(exclude_none=True),
                "file": str(item.file),
                "local": item.local,
            }
            for item in items
        ]
        sys.stdout.write(json.dumps(records, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not items:
        sys.stdout.write("no dismissed findings\n")
        return 0
    for item in items:
        entry = item.entry
        who = f" by {entry.by}" if entry.by else ""
        when = f" on {entry.at[:10]}" if entry.at else ""
        why = f": {entry.reason}" if entry.reason else ""
        line = f"{_what(item)}{who}{when}{why}  [{_where(item, root)}]"
        sys.stdout.write(for_terminal(line) + "\n")
    return 0


def _what(item: Listed) -> str:
    entry = item.entry
    title = f' "{entry.title}"' if entry.title else ""
    path = f" ({entry.path})" if entry.path else ""
    return f"{entry.id or 'F' + entry.fingerprint[:12]}{title}{path}"


def _where(item: Listed, root: Path) -> str:
    return str(item.file) if item.local else item.file.relative_to(root).as_posix()
