"""The pre-scan of one change: one semgrep run over every reviewed file not already cached,
on their new side, and the results on added lines, trimmed, by path.

Every input is a parameter (the scope, the review settings, the home); nothing is read from the
environment but what running semgrep needs (`reviewflow.sast.semgrep`).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reviewflow.config import ReviewSettings
from reviewflow.fsutil import private_umask
from reviewflow.sast.cache import SastCache, cache_key, executable_stamp
from reviewflow.sast.models import SastResult, SastScan
from reviewflow.sast.ruleset import SastRules, load_sast_rules
from reviewflow.sast.semgrep import Semgrep, Watch, check_version, locate, run_scan
from reviewflow.sast.targets import Target, new_side_targets
from reviewflow.select.scope import Scope

SOURCE_DIR = "src"
MAX_MESSAGE_CHARS = 400
MAX_RESULTS_PER_FILE = 20


def prepare(settings: ReviewSettings, scope: Scope) -> tuple[Semgrep, SastRules]:
    """semgrep and the rules, checked: SastError before any model request when semgrep is
    missing or a rule file is not semgrep YAML (its version is checked by `verify_semgrep`,
    and on every scan's own output)."""
    semgrep = Semgrep(locate(settings.sast_semgrep))
    rules = load_sast_rules(settings.sast_rules, scope.change.repo_root, scope.trusted_ref)
    rules.rule_ids()  # a rule file that is not semgrep YAML fails here, with its name
    return semgrep, rules


def verify_semgrep(semgrep: Semgrep, cache: SastCache) -> None:
    """`semgrep --version` is the accepted one (SastError if not): one ~0.2 s process the first
    time an installed semgrep is used, remembered in the cache for its next uses."""
    try:
        stamp = executable_stamp(semgrep.path, semgrep.version)
    except OSError:
        stamp = None  # gone since it was found: the check itself says so
    if stamp is not None and cache.version_checked(stamp):
        return
    with tempfile.TemporaryDirectory(prefix="reviewflow-sast-") as workdir:
        check_version(semgrep.path, Path(workdir))
    if stamp is not None:
        cache.mark_version_checked(stamp)


def prescan(
    scope: Scope,
    settings: ReviewSettings,
    home: str,
    refresh: bool = False,
    verify_version: bool = False,
) -> SastScan:
    """The change's SAST results on added lines (see the module docstring), scanned under the
    cache's lock: a scan of the same home already running (the CLI's early one) is waited for,
    and its results read from the cache."""
    started = time.monotonic()
    semgrep, rules = prepare(settings, scope)
    cache = SastCache(home, refresh)
    with cache.locked():
        return scan_locked(scope, settings, (semgrep, rules), cache, started, verify_version)


def scan_locked(
    scope: Scope,
    settings: ReviewSettings,
    prepared: tuple[Semgrep, SastRules],
    cache: SastCache,
    started: float,
    verify_version: bool = False,
    watch: Watch | None = None,
) -> SastScan:
    """`prescan`'s work, the cache's lock held by the caller (`watch`: see `_run`)."""
    semgrep, rules = prepared
    if verify_version:
        verify_semgrep(semgrep, cache)
    digest = rules.digest
    targets = new_side_targets(scope)
    keys = {t.path: cache_key(digest, semgrep.version, t.path, t.content) for t in targets}
    found: dict[str, list[SastResult]] = {}
    for target in targets:
        cached = cache.get(keys[target.path])
        if cached is not None:
            found[target.path] = cached
    missing = [t for t in targets if t.path not in found]
    if missing:
        scanned = scan_files(semgrep, rules, missing, settings.sast_timeout, watch)
        for target in missing:
            found[target.path] = scanned.get(target.path, [])
            cache.put(keys[target.path], found[target.path])
    return SastScan(
        results=on_added_lines(targets, found),
        files=len(targets),
        reused=len(targets) - len(missing),
        semgrep_version=semgrep.version,
        rules=rules.source,
        rules_digest=digest,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def scan_files(
    semgrep: Semgrep,
    rules: SastRules,
    targets: list[Target],
    timeout: float,
    watch: Watch | None = None,
) -> dict[str, list[SastResult]]:
    """One semgrep run over `targets`, written with the rules into a private temporary folder
    (never the repository: no `.semgrepignore` or config of the change's is ever read)."""
    with private_umask(), tempfile.TemporaryDirectory(prefix="reviewflow-sast-") as tmp:
        workdir = Path(tmp)
        configs = _write(workdir, "rules", ((f.name, f.data) for f in rules.files))
        names = _write(workdir, SOURCE_DIR, ((t.path, t.content) for t in targets))
        raw = run_scan(semgrep, workdir, configs, names, timeout, watch)
    by_path: dict[str, list[SastResult]] = {}
    ids = rules.rule_ids()
    for item in raw:
        result = trim(item, ids)
        if result is not None and result.path.startswith(f"{SOURCE_DIR}/"):
            path = result.path.removeprefix(f"{SOURCE_DIR}/")
            by_path.setdefault(path, []).append(result.model_copy(update={"path": path}))
    return by_path


def _write(workdir: Path, folder: str, files: Iterable[tuple[str, bytes]]) -> list[str]:
    """Write each file under `workdir/folder`; their paths relative to `workdir`."""
    names = []
    for name, data in files:
        path = workdir / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        names.append(f"{folder}/{name}")
    return names


def trim(item: Mapping[str, Any], rule_ids: frozenset[str]) -> SastResult | None:
    """A raw semgrep result as the review gets it: rule ID (without semgrep's folder prefix),
    path, lines, severity and message (one line, bounded); None when it is malformed."""
    try:
        start, end = int(item["start"]["line"]), int(item["end"]["line"])
        extra = item.get("extra") or {}
        message = " ".join(str(extra.get("message", "")).split())
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 1] + "…"
        return SastResult(
            rule_id=rule_id(str(item["check_id"]), rule_ids),
            path=str(item["path"]).removeprefix("./"),
            start_line=start,
            end_line=max(start, end),
            severity=str(extra.get("severity", "info")).lower(),
            message=message,
        )
    except (KeyError, TypeError, ValueError):
        return None


def rule_id(check_id: str, rule_ids: frozenset[str]) -> str:
    """The rule's own ID: semgrep prefixes it with the rule file's folder (`rules.bundled.x`)."""
    if check_id in rule_ids:
        return check_id
    matches = [known for known in rule_ids if check_id.endswith("." + known)]
    return max(matches, key=len) if matches else check_id


def on_added_lines(
    targets: list[Target], found: Mapping[str, list[SastResult]]
) -> dict[str, tuple[SastResult, ...]]:
    """Each file's results that touch one of its added lines, in line order, at most
    `MAX_RESULTS_PER_FILE` (files without any are left out)."""
    kept = {}
    for target in targets:
        results = [r for r in found.get(target.path, []) if r.touches(target.added)]
        results.sort(key=lambda r: (r.start_line, r.end_line, r.rule_id))
        if results:
            kept[target.path] = tuple(_unique(results)[:MAX_RESULTS_PER_FILE])
    return kept


def _unique(results: list[SastResult]) -> list[SastResult]:
    seen: set[tuple[str, int, int]] = set()
    out = []
    for result in results:
        key = (result.rule_id, result.start_line, result.end_line)
        if key not in seen:
            seen.add(key)
            out.append(result)
    return out
