"""Rule layers (000 §5): `--rule FILE`, the repository's, the global one, then the system rules.

Within a layer the first matching rule wins; resolution falls through to the next layer only
when the layer has no match (or its matching rule's reference failed, which adds a warning).
`include`/`exclude` come from the highest layer that declares the key and are not merged.

Rule `path` patterns describe files (`GlobSet(..., directories=False)`: `*.js` never matches
`chart.js/src/main.py`), while `include`/`exclude` keep gitignore directory semantics
(`exclude: ["vendor"]` excludes everything beneath any `vendor` directory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reviewflow.errors import RulesError
from reviewflow.git.snapshot import resolve_commit
from reviewflow.globs.match import GlobSet
from reviewflow.models import ReviewWarning
from reviewflow.rules.models import ResolvedRule, RuleLayer, RuleOrigin
from reviewflow.rules.schema import (
    MAX_RULES_FILE_BYTES,
    REFERENCE_SUFFIXES,
    RulesFile,
    SilenceEntry,
    parse_rules_file,
)
from reviewflow.rules.sources import CommitBase, DirectoryBase, FileBase
from reviewflow.rules.system import SystemCatalog, builtin_system_rules

PROJECT_RULES = ".reviewflow/rules.json"
GLOBAL_RULES = "rules.json"
MAX_REFERENCE_BYTES = 512 * 1024
BUILTIN_NAME = "builtin"
BUILTIN_TEXT = (
    "Review the changed code for concrete defects: incorrect logic, unhandled errors and edge "
    "cases, security problems, resource leaks and concurrency bugs. Report only real problems "
    "in the changed lines, each with evidence from the code."
)


@dataclass(frozen=True, slots=True)
class UserRule:
    """One loaded `rules[]` entry; `text` is None when its reference failed."""

    index: int
    pattern: str
    text: str | None
    reference: str | None
    merge_system_rule: bool


@dataclass(frozen=True)
class UserLayer:
    """One loaded rules.json (custom, project or global)."""

    layer: RuleLayer
    source: str
    rules: tuple[UserRule, ...]
    globs: GlobSet
    include: GlobSet | None
    exclude: GlobSet | None
    ref: str | None = None
    commit: str | None = None
    silence: tuple[SilenceEntry, ...] = ()  # the file's silencing rules (rules.silencing)


class RuleSet:
    """All loaded layers: resolves the rule for a path and holds the effective include/exclude."""

    def __init__(
        self,
        layers: Sequence[UserLayer],
        system: SystemCatalog,
        warnings: Sequence[ReviewWarning] = (),
    ) -> None:
        self.layers = tuple(layers)
        self.system = system
        self.warnings: list[ReviewWarning] = list(warnings)
        self.include, self.include_from = self._filter("include")
        self.exclude, self.exclude_from = self._filter("exclude")

    def _filter(self, key: str) -> tuple[GlobSet, RuleOrigin | None]:
        for layer in self.layers:
            globs: GlobSet | None = getattr(layer, key)
            if globs is not None:
                return globs, RuleOrigin(layer.layer, layer.source)
        return GlobSet(()), None

    def resolve(self, path: str) -> ResolvedRule:
        """The rule for `path`: the first match of the highest layer that has one."""
        for layer in self.layers:
            index = layer.globs.match_index(path)
            if index is None:
                continue
            rule = layer.rules[index]
            if rule.text is None:
                continue
            if not rule.merge_system_rule:
                return ResolvedRule(
                    layer.layer, layer.source, rule.pattern, rule.text, reference=rule.reference
                )
            system = self._system_rule(path)
            return ResolvedRule(
                layer.layer,
                layer.source,
                rule.pattern,
                rule.text.rstrip() + "\n\n" + system.text,
                reference=rule.reference,
                merged_with=system.name,
            )
        return self._system_rule(path)

    def _system_rule(self, path: str) -> ResolvedRule:
        found = self.system.match(path)
        if found is None:
            return ResolvedRule(
                RuleLayer.SYSTEM, f"system:{BUILTIN_NAME}", "**", BUILTIN_TEXT, name=BUILTIN_NAME
            )
        rule, pattern = found
        return ResolvedRule(RuleLayer.SYSTEM, rule.source, pattern, rule.text, name=rule.name)

    def describe(self) -> list[dict[str, Any]]:
        """A JSON-able summary of the loaded layers, highest first (the report's `rules`)."""
        out: list[dict[str, Any]] = []
        for layer in self.layers:
            entry: dict[str, Any] = {
                "layer": layer.layer.value,
                "source": layer.source,
                "rules": len(layer.rules),
                "failed_references": sum(1 for r in layer.rules if r.text is None),
                "include": None if layer.include is None else list(layer.include.patterns),
                "exclude": None if layer.exclude is None else list(layer.exclude.patterns),
            }
            if layer.ref is not None:
                entry["ref"] = layer.ref
                entry["commit"] = layer.commit
            out.append(entry)
        out.append(
            {
                "layer": RuleLayer.SYSTEM.value,
                "source": "system",
                "rules": len(self.system.rules),
                "names": [rule.name for rule in self.system.rules],
                "include": None,
                "exclude": None,
            }
        )
        return out


def load_rules(
    repo_root: Path,
    home: Path,
    custom_rule: Path | None = None,
    trusted_ref: str | None = None,
    *,
    system: SystemCatalog | None = None,
) -> RuleSet:
    """Load every layer; with `trusted_ref` the repository's rules are read at that commit."""
    warnings: list[ReviewWarning] = []
    layers: list[UserLayer] = []
    if custom_rule is not None:
        data = _read_user_file(custom_rule, required=True) or b""
        parsed = parse_rules_file(data, str(custom_rule))
        base = DirectoryBase(custom_rule.absolute().parent)
        layers.append(_build(RuleLayer.CUSTOM, str(custom_rule), parsed, base, warnings))
    project = _load_project(repo_root, trusted_ref, warnings)
    if project is not None:
        layers.append(project)
    global_path = home / GLOBAL_RULES
    global_data = _read_user_file(global_path, required=False)
    if global_data is not None:
        parsed = parse_rules_file(global_data, str(global_path))
        layers.append(
            _build(RuleLayer.GLOBAL, str(global_path), parsed, DirectoryBase(home), warnings)
        )
    catalog = builtin_system_rules() if system is None else system
    return RuleSet(layers, catalog, warnings)


def _load_project(
    repo_root: Path, trusted_ref: str | None, warnings: list[ReviewWarning]
) -> UserLayer | None:
    base: FileBase
    commit = None
    if trusted_ref is None:
        base = DirectoryBase(repo_root)
        source = PROJECT_RULES
    else:
        commit = resolve_commit(repo_root, trusted_ref)
        base = CommitBase(repo_root, commit)
        source = f"{PROJECT_RULES}@{commit}"
    try:
        data = base.read(PROJECT_RULES, (".json",), MAX_RULES_FILE_BYTES)
    except RulesError as exc:
        raise RulesError(f"cannot read rules file {source}: {exc}") from None
    if data is None:
        return None
    parsed = parse_rules_file(data, source)
    layer = _build(RuleLayer.PROJECT, source, parsed, base, warnings)
    if trusted_ref is None:
        return layer
    return replace(layer, ref=trusted_ref, commit=commit)


def _read_user_file(path: Path, *, required: bool) -> bytes | None:
    """A custom or global rules file (the user's own: followed wherever it points)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_RULES_FILE_BYTES + 1)
    except FileNotFoundError:
        if not required:
            return None
        raise RulesError(f"cannot read rule file {path}: no such file") from None
    except OSError as exc:
        raise RulesError(f"cannot read rule file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_RULES_FILE_BYTES:
        raise RulesError(f"rule file {path} is larger than {MAX_RULES_FILE_BYTES} bytes")
    return data


def _build(
    layer: RuleLayer,
    source: str,
    parsed: RulesFile,
    base: FileBase,
    warnings: list[ReviewWarning],
) -> UserLayer:
    texts: dict[str, str | None] = {}
    rules = []
    for index, entry in enumerate(parsed.rules):
        reference = entry.reference
        text: str | None = entry.rule
        if reference is not None:
            if reference not in texts:
                texts[reference] = _read_reference(layer, source, base, reference, warnings)
            text = texts[reference]
        rules.append(UserRule(index, entry.path, text, reference, entry.merge_system_rule))
    return UserLayer(
        layer=layer,
        source=source,
        rules=tuple(rules),
        globs=GlobSet([entry.path for entry in parsed.rules], directories=False),
        include=GlobSet(parsed.include) if parsed.declares_include else None,
        exclude=GlobSet(parsed.exclude) if parsed.declares_exclude else None,
        silence=tuple(parsed.silence),
    )


def _read_reference(
    layer: RuleLayer,
    source: str,
    base: FileBase,
    reference: str,
    warnings: list[ReviewWarning],
) -> str | None:
    """The text of a rule reference, or None after adding a `rule_reference_failed` warning."""
    try:
        data = base.read(reference, REFERENCE_SUFFIXES, MAX_REFERENCE_BYTES)
        if data is None:
            raise RulesError("not found")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise RulesError("is not UTF-8 text") from None
        if not text.strip():
            raise RulesError("is empty")
    except RulesError as exc:
        warnings.append(
            ReviewWarning(
                code="rule_reference_failed",
                message=(
                    f"{layer.value} rules {source}: reference '{reference}' ({exc}); "
                    "its rule is skipped and lower layers apply"
                ),
                path=reference if layer is RuleLayer.PROJECT else None,
            )
        )
        return None
    return text
