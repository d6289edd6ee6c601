"""`reviewflow context`: what the model is given beyond the diff, per reviewed file, with its
tokens (the change's context packs, docs/context.md), or with `--json FILE|-` the document
`reviewflow.context.pack.context_record` gives.

Needs no model and starts no Prefect server: the front half runs here as `review --preview`
runs it (`reviewflow.select.scope.prepare`), then the new side's code index (kept in the
home's store, as a review keeps it) and each kept file's pack. Bad input is one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from flows.cli.indexing import indexing_progress
from flows.cli.review import flag_overrides, request_from_args
from reviewflow.config import home_dir, load_config, report_off
from reviewflow.fsutil import check_output, private_umask, write_output
from reviewflow.report.wording import counted

if TYPE_CHECKING:
    from reviewflow.context.pack import ContextPack
    from reviewflow.context.records import IndexStats


def cmd_context(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Print every kept file's context pack and its tokens (or write the JSON document)."""
    from reviewflow.context.pack import context_record
    from reviewflow.review.jobs import snapshot_of
    from reviewflow.review.packs import file_packs
    from reviewflow.select.scope import prepare

    request = request_from_args(args, env)
    config = load_config(home_dir(env), env, flag_overrides(args))
    target = args.context_json
    if target and not report_off(target):
        check_output(target)  # before any work, as a review's reports
    with private_umask():  # the index store under the home: the user's alone
        scope = prepare(request, config.review)  # `--diff -`: reads stdin
        snapshot = snapshot_of(scope)
        shown = indexing_progress(sys.stderr)
        packs, stats = file_packs(scope, snapshot, config.review, request.home, shown)
    doc = context_record(packs, stats)
    if target and not report_off(target):
        write_output(target, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    stream = sys.stderr if target == "-" else sys.stdout  # stdout: the JSON alone
    stream.write(render_context(packs, stats, context_on=config.review.context))
    return 0


def render_context(packs: list[ContextPack], stats: IndexStats, *, context_on: bool) -> str:
    """The text report: one block per kept file (its pack as the model reads it), then the
    index build."""
    given = [pack for pack in packs if pack.render()]
    tokens = sum(pack.tokens for pack in given)
    lines = [
        f"context: {counted(len(packs), 'file')} reviewed, {len(given)} with context beyond "
        f"the diff ({counted(tokens, 'token')})"
    ]
    if not context_on:
        lines.append("note: review.context is off: reviews give the model none of this")
    for pack in packs:
        text = pack.render()
        if not text:
            lines.append(f"\n{pack.path}: nothing beyond the diff")
            continue
        lines.append(f"\n{pack.path}: {counted(pack.tokens, 'token')}")
        lines.extend(f"  {line}" for line in text.splitlines())
    lines.append(
        f"\nindex: {counted(stats.files, 'source file')} ({stats.parsed} parsed, "
        f"{stats.reused} reused) in {stats.seconds:.2f} s"
    )
    return "\n".join(lines) + "\n"
