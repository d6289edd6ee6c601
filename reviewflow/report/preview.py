"""`--preview`: the files a review would cover, the rule for each, and why others are left out."""

from __future__ import annotations

from typing import Any

from reviewflow import __version__
from reviewflow.cost.text import estimate_line, estimate_table
from reviewflow.report.textsafe import for_terminal, json_safe, terminal_text
from reviewflow.report.wording import change_words
from reviewflow.request import ReviewRequest
from reviewflow.rules.models import ResolvedRule
from reviewflow.sast.models import SastScan
from reviewflow.select.filtering import SelectedFile
from reviewflow.select.scope import Scope

PREVIEW_SCHEMA_VERSION = "1"


def rule_record(rule: ResolvedRule) -> dict[str, Any]:
    return {
        "layer": rule.layer.value,
        "source": rule.source,
        "pattern": rule.pattern,
        "name": rule.name,
        "reference": rule.reference,
        "merged_with": rule.merged_with,
    }


def change_metadata(scope: Scope, request: ReviewRequest) -> dict[str, Any]:
    change = scope.change
    return {
        "repository": str(change.repo_root),
        "mode": request.mode_name,
        "diff_file": request.diff_source if request.mode_name == "diff" else None,
        "from": request.from_ref,
        "to": request.to_ref,
        "commit": request.commit,
        "base_sha": change.base_sha,
        "head_sha": change.head_sha,
        "trusted_ref": scope.trusted_ref,
        "tool_version": __version__,
    }


def _file_record(selected: SelectedFile) -> dict[str, Any]:
    diff = selected.file
    return {
        "path": diff.path,
        "old_path": diff.old_path,
        "status": diff.status.value,
        "added": diff.added,
        "removed": diff.removed,
        "included_by": selected.included_by,
        "rule": rule_record(selected.rule),
    }


def preview_document(
    scope: Scope,
    request: ReviewRequest,
    sast: SastScan | None = None,
    estimate: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The preview as a JSON-able document (non-UTF-8 name bytes shown as `\\xNN`); with
    `--sast`, the pre-scan and each file's results on added lines; with `estimate`
    (`cost.text.estimate_record`), the review's expected cost."""
    selection = scope.selection
    doc = {
        "schema_version": PREVIEW_SCHEMA_VERSION,
        "kind": "preview",
        "metadata": change_metadata(scope, request),
        "stats": {
            "files_changed": len(scope.change.files),
            "files_reviewed": len(selection.kept),
            "files_excluded": len(selection.excluded),
        },
        "files": [_file_record(item) for item in selection.kept],
        "excluded_files": [
            {"path": ex.path, "reason": ex.reason.value, "detail": ex.detail}
            for ex in selection.excluded
        ],
        "rules": scope.rules.describe(),
        "instructions": scope.instructions.record() if scope.instructions else None,
        "warnings": [
            {"code": w.code, "message": w.message, "path": w.path} for w in scope.warnings
        ],
    }
    if sast is not None:
        _add_sast(doc, sast)
    if estimate is not None:
        doc["estimate"] = estimate
    safe: dict[str, Any] = json_safe(doc)
    return safe


def instructions_line(record: dict[str, Any]) -> str:
    """The instructions' file, size, digest and where they were read from, in one line."""
    digest = record["sha256"][:12]
    return f"{record['path']} ({record['bytes']} bytes, sha256 {digest}) from {record['read_from']}"


def _add_sast(doc: dict[str, Any], sast: SastScan) -> None:
    doc["sast"] = {
        "semgrep_version": sast.semgrep_version,
        "rules": sast.rules,
        "rules_digest": sast.rules_digest,
        "files_scanned": sast.files,
        "files_reused": sast.reused,
        "results": sast.total,
        "duration_ms": sast.duration_ms,
    }
    for item in doc["files"]:
        item["sast"] = [r.model_dump(mode="json") for r in sast.for_path(item["path"])]


def _describe_rule(rule: dict[str, Any]) -> str:
    label = rule["name"] or rule["layer"]
    text = f"{rule['layer']} rule {label!s} ({rule['source']}, pattern {rule['pattern']})"
    if rule["merged_with"]:
        text += f" + system {rule['merged_with']}"
    return text


def render_preview(doc: dict[str, Any]) -> str:
    """Plain-text preview for the console; names are escaped so they cannot drive the terminal."""
    return terminal_text(_render(doc))


def _padded(paths: list[str]) -> list[str]:
    """Paths escaped as the console shows them, padded to one column width."""
    shown = [for_terminal(path) for path in paths]
    width = max(map(len, shown), default=0)
    return [path.ljust(width) for path in shown]


def _render(doc: dict[str, Any]) -> list[str]:
    meta = doc["metadata"]
    source = f" {meta['diff_file']}" if meta["diff_file"] else ""
    lines = [f"Preview of {change_words(meta['mode'], source)} {meta['repository']}"]
    if meta["base_sha"] or meta["head_sha"]:
        lines.append(f"  base {meta['base_sha'] or '-'}  head {meta['head_sha'] or '-'}")
    if meta["trusted_ref"]:
        lines.append(f"  repository rules read from trusted ref {meta['trusted_ref']}")
    if doc["instructions"]:
        lines.append(f"  instructions for every file: {instructions_line(doc['instructions'])}")
    files = doc["files"]
    lines += ["", f"Reviewed files ({len(files)}):"]
    paths = _padded([f["path"] for f in files])
    for path, item in zip(paths, files, strict=True):
        extra = f"  [included by {item['included_by']}]" if item["included_by"] else ""
        counts = f"+{item['added']} -{item['removed']}"
        lines.append(f"  {path}  {counts:>11}  {_describe_rule(item['rule'])}{extra}")
        lines.extend(_sast_lines(item.get("sast", ())))
    if "sast" in doc:
        lines += ["", _sast_summary(doc["sast"])]
    if "estimate" in doc:
        estimate = doc["estimate"]
        lines += ["", "Estimated cost (before any request; docs/cost.md says how it is made):"]
        lines += estimate_table(estimate, [for_terminal(f["path"]) for f in estimate["files"]])
        lines += ["", estimate_line(estimate)]
    excluded = doc["excluded_files"]
    lines += ["", f"Excluded files ({len(excluded)}):"]
    paths = _padded([ex["path"] for ex in excluded])
    for path, ex in zip(paths, excluded, strict=True):
        detail = f" ({ex['detail']})" if ex["detail"] else ""
        lines.append(f"  {path}  {ex['reason']}{detail}")
    if doc["warnings"]:
        lines += ["", f"Warnings ({len(doc['warnings'])}):"]
        lines.extend(f"  [{w['code']}] {w['message']}" for w in doc["warnings"])
    return lines


def _sast_lines(results: list[dict[str, Any]]) -> list[str]:
    """A file's SAST results under its line: `    sast L12 [error] rule-id: message`."""
    out = []
    for result in results:
        start, end = result["start_line"], result["end_line"]
        where = f"L{start}" if start == end else f"L{start}-{end}"
        rule = for_terminal(result["rule_id"])
        out.append(f"      sast {where} [{result['severity']}] {rule}: {result['message']}")
    return out


def _sast_summary(sast: dict[str, Any]) -> str:
    reused = f", {sast['files_reused']} from cache" if sast["files_reused"] else ""
    return (
        f"SAST pre-scan (semgrep {sast['semgrep_version']}, rules: {sast['rules']}): "
        f"{sast['results']} result(s) on added lines in {sast['files_scanned']} file(s) scanned"
        f"{reused}, {sast['duration_ms']} ms"
    )
