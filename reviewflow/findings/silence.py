"""Silencing, after finalize: findings under a `reviewflow: ignore` comment are dropped as
`suppressed`, dismissed fingerprints as `dismissed` (both with a detail naming where).

A suppression the change itself adds is reported as such (a `suppression_added` warning); it
silences only when `honour_new` (`review.honour_new_suppressions`: by default true locally,
false in CI), else the finding stays and a `suppression_not_honoured` warning says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reviewflow.errors import ToolError
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import Dropped, DropReason, Finding
from reviewflow.findings.suppress import Suppression, find_suppressions, suppression_for
from reviewflow.models import ReviewWarning
from reviewflow.review.reader import Snapshot, read_bytes
from reviewflow.rules.dismissals import Dismissed

ADDED = "suppression_added"
NOT_HONOURED = "suppression_not_honoured"
SETTING = "review.honour_new_suppressions"


def silence(
    finalized: Finalized,
    suppressions: Mapping[str, Sequence[Suppression]],
    dismissed: Dismissed,
    honour_new: bool,
    warnings: Sequence[ReviewWarning] = (),
) -> Finalized:
    """`finalized` without its suppressed and dismissed findings (now drops), with the
    warnings on suppressions (`warnings`: those found reading them)."""
    kept: list[Finding] = []
    drops: list[Dropped] = []
    notes = list(warnings)
    for finding in finalized.findings:
        found = suppression_for(finding, suppressions.get(finding.path, ()))
        if found is not None and found.added:
            notes.append(_added_note(finding, found, honour_new))
        if found is not None and (honour_new or not found.added):
            drops.append(_suppressed(finding, found))
        elif finding.fingerprint in dismissed.entries:
            drops.append(
                _dropped(finding, DropReason.DISMISSED, dismissed.detail(finding.fingerprint))
            )
        else:
            kept.append(finding)
    return finalized.model_copy(
        update={
            "findings": tuple(kept),
            "dropped": (*finalized.dropped, *drops),
            "warnings": (*finalized.warnings, *notes),
        }
    )


def read_suppressions(
    snapshot: Snapshot, added_lines: Mapping[str, Sequence[int]], paths: Sequence[str]
) -> tuple[dict[str, list[Suppression]], list[ReviewWarning]]:
    """The suppression comments of each of `paths` as the file is after the change (the
    snapshot the tools read); `added_lines[path]` are the lines the change adds to it. A file
    that cannot be read is a `suppressions_unread` warning: its findings stay."""
    found: dict[str, list[Suppression]] = {}
    warnings: list[ReviewWarning] = []
    for path in sorted(set(paths)):
        try:
            text = read_bytes(snapshot, path).decode("utf-8", "replace")
        except ToolError as exc:
            warnings.append(
                ReviewWarning(
                    "suppressions_unread", f"{exc}: its suppression comments were not read", path
                )
            )
            continue
        found[path], notes = find_suppressions(path, text, frozenset(added_lines.get(path, ())))
        warnings.extend(notes)
    return found, warnings


def _dropped(finding: Finding, reason: DropReason, detail: str) -> Dropped:
    return Dropped(
        path=finding.path, title=finding.title, reason=reason, detail=detail, finding=finding
    )


def _suppressed(finding: Finding, found: Suppression) -> Dropped:
    """`app.py:12 reviewflow: ignore[security] (added by this change): test key`."""
    added = " (added by this change)" if found.added else ""
    why = f": {found.reason}" if found.reason else ""
    return _dropped(finding, DropReason.SUPPRESSED, f"{found.location} {found.comment}{added}{why}")


def _added_note(finding: Finding, found: Suppression, honour_new: bool) -> ReviewWarning:
    said = f"line {found.line} adds `{found.comment}`"
    target = f'{finding.id} "{finding.title}"'
    if honour_new:
        return ReviewWarning(
            ADDED, f"{said}, which silences {target} ({SETTING} is true)", found.path
        )
    return ReviewWarning(
        NOT_HONOURED,
        f"{said}, which would silence {target}: not honoured, {SETTING} is false (the default "
        "in CI): a change cannot silence its own findings",
        found.path,
    )


def silenced_line(dropped: Sequence[Dropped], warnings: Sequence[ReviewWarning]) -> str | None:
    """The summary's line on silencing (None when nothing was silenced or tried to be), e.g.
    `2 suppressed (1 by a comment this change adds), 1 dismissed`."""
    suppressed = sum(d.reason is DropReason.SUPPRESSED for d in dropped)
    dismissed = sum(d.reason is DropReason.DISMISSED for d in dropped)
    added = sum(w.code == ADDED for w in warnings)
    refused = sum(w.code == NOT_HONOURED for w in warnings)
    if not (suppressed or dismissed or refused):
        return None
    parts = [
        f"{suppressed} suppressed" + (f" ({added} by a comment this change adds)" if added else "")
    ]
    parts.append(f"{dismissed} dismissed")
    if refused:
        parts.append(f"{refused} not silenced by a comment this change adds ({SETTING} is false)")
    return ", ".join(parts)
