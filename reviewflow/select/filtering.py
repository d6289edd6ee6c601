"""Deterministic file filtering (000 §6): which changed files are reviewed, and why not."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from reviewflow.git.encoding import from_shown
from reviewflow.git.models import FileDiff, FileStatus
from reviewflow.rules.loader import RuleSet
from reviewflow.rules.models import ResolvedRule


class ExcludeReason(StrEnum):
    INVALID_PATH = "invalid_path"
    BINARY = "binary"
    DELETED = "deleted"
    USER_EXCLUDE = "user_exclude"
    UNSUPPORTED_EXT = "unsupported_ext"
    DEFAULT_PATH = "default_path"
    TOO_LARGE = "too_large"
    NO_ADDED_LINES = "no_added_lines"


SUPPORTED_EXTENSIONS = frozenset(
    """
    py pyi pyx pxd js jsx mjs cjs ts tsx mts cts vue svelte java kt kts scala sc groovy gradle
    go rs c h cc cpp cxx c++ hpp hh hxx h++ ipp inl m mm cs fs fsx vb rb rake gemspec php
    sh bash zsh ksh fish ps1 psm1 bat cmd swift dart lua pl pm r jl ex exs erl hrl clj cljs
    hs ml mli elm nim zig sol sql proto graphql gql tf tfvars hcl yml yaml dockerfile
    jenkinsfile mk cmake bzl nix
    """.split()
)

BUILTIN_BASENAMES = frozenset(
    name.lower()
    for name in """
    Dockerfile Containerfile Makefile GNUmakefile makefile CMakeLists.txt Jenkinsfile
    Vagrantfile Rakefile Gemfile Podfile Brewfile Fastfile Justfile Earthfile Procfile
    pom.xml build.gradle settings.gradle build.xml package.json Cargo.toml go.mod
    pyproject.toml setup.cfg tox.ini requirements.txt Pipfile BUILD BUILD.bazel WORKSPACE
    meson.build deno.json tsconfig.json composer.json
    """.split()
)

# Basename prefixes such as Dockerfile.dev or Jenkinsfile.release.
BUILTIN_PREFIXES = ("dockerfile.", "containerfile.", "jenkinsfile.", "makefile.")

# Tests, vendored and generated code: left out unless a user include brings them back.
DEFAULT_EXCLUDED_DIRS = frozenset(
    "test tests __tests__ __mocks__ testdata node_modules vendor third_party".split()
)
# .NET test projects (`MyApp.Tests`, `MyApp.UnitTests`); RSpec's `spec/` only at the root,
# where Rails puts it (a `pkg/spec/` package elsewhere is production code).
DEFAULT_EXCLUDED_DIR_NAMES = re.compile(r"(?i).+\.[a-z]*tests?")
DEFAULT_EXCLUDED_NAMES = re.compile(
    r"""(?ix)
    ^(?: test_.*\.py | .*_test\.py | tests\.py | conftest\.py | .*_pb2(?:_grpc)?\.py
       | .*_test\.go | .*\.pb\.go
       | .*\.(?:test|spec)\.(?:js|jsx|mjs|cjs|ts|tsx|mts|cts)
       | .*_(?:spec|test)\.rb
       | .*\.min\.(?:js|css) | .*\.generated\..* )$
    """
)
# CamelCase conventions are case-sensitive: FooTest.java, FooIT.kt, FooTest.php (not Latest.php).
DEFAULT_EXCLUDED_CLASSES = re.compile(r".*(?:Test|Tests|IT)\.(?:java|kt|cs|scala|groovy|php)$")


def default_excluded(path: str) -> str | None:
    """Why `path` is a test, vendored or generated file by default (or None)."""
    parts = path.split("/")
    if len(parts) > 1 and parts[0].lower() == "spec":
        return "spec/"
    for part in parts[:-1]:
        if part.lower() in DEFAULT_EXCLUDED_DIRS or DEFAULT_EXCLUDED_DIR_NAMES.fullmatch(part):
            return f"{part}/"
    if DEFAULT_EXCLUDED_NAMES.match(parts[-1]) or DEFAULT_EXCLUDED_CLASSES.match(parts[-1]):
        return "test or generated file name"
    return None


@dataclass(frozen=True, slots=True)
class SelectedFile:
    file: FileDiff
    rule: ResolvedRule
    included_by: str | None = None  # the user include pattern that bypassed the defaults


@dataclass(frozen=True, slots=True)
class ExcludedFile:
    path: str
    reason: ExcludeReason
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    kept: tuple[SelectedFile, ...]
    excluded: tuple[ExcludedFile, ...]


def select_files(
    files: Iterable[FileDiff],
    rules: RuleSet,
    worktree: Path | None = None,
    max_file_bytes: int | None = None,
) -> Selection:
    """Apply the filter in 000 §6 order, then the size limit and the added-lines check (both
    skipped with `max_file_bytes` None: a path probe, which has no content).

    `worktree` also rejects paths escaping through symlinks.
    """
    kept: list[SelectedFile] = []
    excluded: list[ExcludedFile] = []
    for diff in files:
        reason, detail, included_by = _classify(diff, rules, worktree)
        if reason is None and max_file_bytes is not None:
            reason, detail = _size_check(diff, max_file_bytes)
        if reason is None and max_file_bytes is not None and not diff.added:
            reason, detail = ExcludeReason.NO_ADDED_LINES, _nothing_added(diff)
        if reason is None:
            kept.append(SelectedFile(diff, rules.resolve(diff.path), included_by))
        else:
            excluded.append(ExcludedFile(diff.path, reason, detail))
    return Selection(tuple(kept), tuple(excluded))


def _classify(
    diff: FileDiff, rules: RuleSet, worktree: Path | None
) -> tuple[ExcludeReason | None, str | None, str | None]:
    problem = path_problem(diff.path, worktree, diff.is_symlink)
    if problem is not None:
        return ExcludeReason.INVALID_PATH, problem, None
    if diff.binary:
        return ExcludeReason.BINARY, None, None
    if diff.status is FileStatus.DELETED:
        return ExcludeReason.DELETED, None, None
    pattern = rules.exclude.match(diff.path)
    if pattern is not None:
        return ExcludeReason.USER_EXCLUDE, pattern, None
    pattern = rules.include.match(diff.path)
    if pattern is not None:
        return None, None, pattern
    if not is_supported(diff.path) and not _has_specific_system_rule(rules, diff.path):
        return ExcludeReason.UNSUPPORTED_EXT, None, None
    why = default_excluded(diff.path)
    if why is not None:
        return ExcludeReason.DEFAULT_PATH, why, None
    return None, None, None


def _size_check(diff: FileDiff, limit: int) -> tuple[ExcludeReason | None, str | None]:
    """TOO_LARGE when the file's diff text (or an unread file's size) is over `limit` bytes."""
    if diff.unread_bytes is not None:
        return ExcludeReason.TOO_LARGE, f"{_size(diff.unread_bytes)} file not read, {_limit(limit)}"
    size = diff_text_bytes(diff, limit)
    if size > limit:
        return ExcludeReason.TOO_LARGE, f"{_size(size)} of diff text, {_limit(limit)}"
    return None, None


def _nothing_added(diff: FileDiff) -> str:
    """What a change that adds no line did: a finding is only ever placed on an added line,
    so reviewing it would cost requests and could report nothing."""
    if diff.hunks:
        return "only lines removed"
    if diff.status in (FileStatus.RENAMED, FileStatus.COPIED):
        return f"{diff.status.value} from {diff.old_path}, content unchanged"
    if diff.status is FileStatus.ADDED:
        return "empty file"
    if diff.mode_only:
        return f"mode {diff.old_mode} -> {diff.new_mode} only"
    return "no content change"


def diff_text_bytes(diff: FileDiff, limit: int) -> int:
    """The UTF-8 size of the file's hunk lines (exact up to `limit`, and above it past it)."""
    lines = [line for hunk in diff.hunks for line in hunk.body]
    chars = sum(len(line) + 1 for line in lines)
    if chars > limit or chars * 4 <= limit:  # a UTF-8 character is 1 to 4 bytes
        return chars
    return sum(len(line.encode("utf-8", "surrogateescape")) + 1 for line in lines)


def _size(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size} bytes"


def _limit(limit: int) -> str:
    return f"limit {_size(limit)} (review.max_file_bytes)"


def _has_specific_system_rule(rules: RuleSet, path: str) -> bool:
    """A file a language or target rule names (`build.sbt`, `main.tf.json`) is reviewed."""
    found = rules.system.match(path)
    return found is not None and found[0].kind != "fallback"


def is_supported(path: str) -> bool:
    """True for a built-in basename or an allowlisted extension."""
    name = posixpath.basename(path).lower()
    if name in BUILTIN_BASENAMES or name.startswith(BUILTIN_PREFIXES):
        return True
    _, dot, ext = name.rpartition(".")
    return bool(dot) and ext in SUPPORTED_EXTENSIONS


def path_problem(path: str, worktree: Path | None = None, is_symlink: bool = False) -> str | None:
    """Why a diff path may not be reviewed (absolute, traversal, .git, escapes), or None."""
    if not path or "\x00" in path:
        return "empty or NUL in path"
    if path.startswith("/") or _has_drive(path):
        return "absolute path"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "path traversal or empty component"
    if parts[0].lower() == ".git":
        return "inside .git"
    if _CONTROL.search(path):
        return "control character in path"
    if worktree is not None and _escapes(worktree, parts, is_symlink):
        return "symlink escapes the repository"
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _has_drive(path: str) -> bool:
    """A Windows drive path such as `C:/x` or `C:`, not a name like `a:b.py`."""
    return path[:1].isalpha() and path[1:2] == ":" and path[2:3] in ("", "/", "\\")


def _escapes(worktree: Path, parts: list[str], is_symlink: bool) -> bool:
    """True when the working-tree file resolves outside the worktree or into `.git`.

    A file the diff itself marks as a symlink is reviewed as its link text and never opened,
    so only its parent directories must stay inside.
    """
    root = os.path.realpath(worktree)
    checked = [from_shown(part) for part in (parts[:-1] if is_symlink else parts)]
    target = os.path.realpath(os.path.join(root, *checked))
    if os.path.commonpath([root, target]) != root:
        return True
    inside = os.path.relpath(target, root).split(os.sep)
    return bool(inside) and inside[0].lower() == ".git"
