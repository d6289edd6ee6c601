"""Silencing, after finalize: findings under a `reviewflow: ignore` comment are dropped as
`suppressed`, dismissed fingerprints as `dismissed` (both with a detail naming where; a finding
of several passes is dismissed when any fingerprint of its cluster is, or a dismissal recorded
its fingerprint in the cluster of the finding dismissed), and the
findings a rules file's `silence[]` entry covers as `silence_rule` (with the rule's name).

An expired silencing rule silences nothing and is named (`silence_rule_expired`); one that
silenced nothing in every review this home ran with it is named too (`silence_rule_unused`).

A suppression the change itself adds is reported as such (a `suppression_added` warning); it
silences only when `honour_new` (`review.honour_new_suppressions`: by default true locally,
false in CI), else the finding stays and a `suppression_not_honoured` warning says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime

from reviewflow.errors import ToolError
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import Dropped, DropReason, Finding
from reviewflow.findings.suppress import Suppression, find_suppressions, suppression_for
from reviewflow.models import ReviewWarning
from reviewflow.review.reader import Snapshot, read_bytes
from reviewflow.rules.dismissals import Dismissal, Dismissed
from reviewflow.rules.silencing import RuleUsage, SilenceRule

ADDED = "suppression_added"
EXPIRED = "silence_rule_expired"
UNUSED = "silence_rule_unused"
NOT_HONOURED = "suppression_not_honoured"
SETTING = "review.honour_new_suppressions"


def silence(
    finalized: Finalized,
    suppressions: Mapping[str, Sequence[Suppression]],
    dismissed: Dismissed,
    honour_new: bool,
    warnings: Sequence[ReviewWarning] = (),
    *,
    today: date | None = None,
    usage: Mapping[str, RuleUsage] | None = None,
) -> Finalized:
    """`finalized` without its suppressed, dismissed and rule-silenced findings (now drops),
    with the warnings on suppressions (`warnings`: those found reading them) and on expired
    or unused silencing rules (`today`: the review's day; `usage`: the home's record)."""
    day = today or datetime.now(UTC).date()
    active = [rule for rule in dismissed.rules if not rule.expired(day)]
    kept: list[Finding] = []
    drops: list[Dropped] = []
    notes = [*warnings, *_rule_notes(dismissed.rules, usage or {}, day)]
    for finding in finalized.findings:
        found = suppression_for(finding, suppressions.get(finding.path, ()))
        if found is not None and found.added:
            notes.append(_added_note(finding, found, honour_new))
        if found is not None and (honour_new or not found.added):
            drops.append(_suppressed(finding, found))
        elif (entry := dismissed.match(finding.fingerprints)) is not None:
            drops.append(_dismissed(finding, entry, dismissed))
        elif (rule := _rule_for(finding, active)) is not None:
            drop = _dropped(finding, DropReason.SILENCE_RULE, rule.detail())
            drops.append(drop.model_copy(update={"rule": rule.name}))
        else:
            kept.append(finding)
    return finalized.model_copy(
        update={
            "findings": tuple(kept),
            "dropped": (*finalized.dropped, *drops),
            "warnings": (*finalized.warnings, *notes),
        }
    )


def _rule_for(finding: Finding, rules: Sequence[SilenceRule]) -> SilenceRule | None:
    """The first silencing rule (highest layer first) that covers `finding`."""
    category = finding.category.value
    return next((r for r in rules if r.covers(category, finding.rule_id, finding.path)), None)


def _rule_notes(
    rules: Sequence[SilenceRule], usage: Mapping[str, RuleUsage], today: date
) -> list[ReviewWarning]:
    """An expired rule named (it silences nothing now), and, when this home ran reviews with
    it and it silenced nothing in any of them, named as unused."""
    notes = []
    for rule in rules:
        if not rule.expired(today):
            continue
        seen = usage.get(rule.identity)
        life = ""
        if seen is not None and seen.reviews:
            life = f"; it silenced {seen.silenced} finding(s) in {seen.reviews} review(s)"
        notes.append(
            ReviewWarning(
                EXPIRED,
                f"silencing rule {rule.name} ({rule.target}) expired on {rule.expires}: it "
                f"silences nothing now{life}; renew its `expires` or remove it",
            )
        )
        if seen is not None and seen.reviews and not seen.silenced:
            notes.append(
                ReviewWarning(
                    UNUSED,
                    f"silencing rule {rule.name} ({rule.target}) silenced nothing in its whole "
                    f"life ({seen.reviews} review(s) on this machine, {seen.first} to "
                    f"{seen.last}): remove it",
                )
            )
    return notes


def silenced_by_rule(dropped: Sequence[Dropped]) -> dict[str, int]:
    """How many findings each silencing rule silenced (by the rule's name)."""
    counts: dict[str, int] = {}
    for drop in dropped:
        if drop.reason is DropReason.SILENCE_RULE and drop.rule:
            counts[drop.rule] = counts.get(drop.rule, 0) + 1
    return counts


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


def _dismissed(finding: Finding, entry: Dismissal, dismissed: Dismissed) -> Dropped:
    """A dismissed finding's drop; dismissed as another finding of its cluster (another pass
    placed or worded it otherwise, here or in the review that was dismissed), `dismissed_as`
    names that one and the detail says so."""
    key = next(f for f in finding.fingerprints if dismissed.entries.get(f) is entry)
    detail = dismissed.detail(key)
    if entry.fingerprint == finding.fingerprint:
        return _dropped(finding, DropReason.DISMISSED, detail)
    detail += f" (recorded for F{entry.fingerprint[:12]}: this finding as another pass placed it)"
    drop = _dropped(finding, DropReason.DISMISSED, detail)
    return drop.model_copy(update={"dismissed_as": entry.fingerprint})


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
    ruled = sum(d.reason is DropReason.SILENCE_RULE for d in dropped)
    added = sum(w.code == ADDED for w in warnings)
    refused = sum(w.code == NOT_HONOURED for w in warnings)
    if not (suppressed or dismissed or refused or ruled):
        return None
    parts = [
        f"{suppressed} suppressed" + (f" ({added} by a comment this change adds)" if added else "")
    ]
    parts.append(f"{dismissed} dismissed")
    if ruled:
        parts.append(f"{ruled} by silencing rules")
    if refused:
        parts.append(f"{refused} not silenced by a comment this change adds ({SETTING} is false)")
    return ", ".join(parts)
