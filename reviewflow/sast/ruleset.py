"""The rules a pre-scan runs: the bundled ruleset, plus the user's own directory (`--sast-rules
DIR`, `review.sast_rules`).

The user's directory is a trusted layer, like the repository's rules (`reviewflow.rules.trust`):
when the review reads the repository's rules at a trusted ref (in CI, or with `--trusted-ref`)
and the directory is inside the repository, its rule files are read at that ref, never from
the checkout, so a change cannot bring the rules it is scanned with. A directory outside the
repository is the operator's and is read from disk. Only `.yaml`/`.yml` files are rules.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from reviewflow.errors import GitError, SastError
from reviewflow.git.runner import run_git
from reviewflow.git.snapshot import read_blob, resolve_commit

BUNDLED = Path(__file__).parent / "bundled"
SUFFIXES = (".yaml", ".yml")
MAX_RULE_FILE_BYTES = 1 << 20
MAX_RULE_FILES = 500
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: ~10x faster when built


@dataclass(frozen=True, slots=True)
class RuleFile:
    """One rule file: `name` is where it goes in the scan's rules folder (`bundled/...`)."""

    name: str
    data: bytes
    shown: str = ""  # where the user keeps it, for messages (the real path, or PATH@REF)


@dataclass(frozen=True, slots=True)
class SastRules:
    files: tuple[RuleFile, ...]
    source: str  # for people: "bundled" or "bundled + DIR[@REF]"

    @property
    def digest(self) -> str:
        """A hash of every rule file's name and bytes (part of the results' cache key)."""
        digest = hashlib.sha256()
        for item in sorted(self.files, key=lambda f: f.name):
            digest.update(item.name.encode() + b"\0" + item.data + b"\0")
        return digest.hexdigest()

    def rule_ids(self) -> frozenset[str]:
        """Every rule ID the files declare; SastError for a file that is not semgrep YAML."""
        return frozenset(rule_id for item in self.files for rule_id in _ids(item))


def load_sast_rules(user_dir: str | None, repo_root: Path, trusted_ref: str | None) -> SastRules:
    """The bundled rules and the user's directory (see the module docstring for where from)."""
    files = [bundled_file(path) for path in sorted(BUNDLED.rglob("*.yaml"))]
    if not user_dir:
        return SastRules(tuple(files), "bundled")
    directory = user_directory(user_dir, repo_root)
    inside = _inside(directory, repo_root)
    if trusted_ref is not None and inside is not None:
        commit = resolve_commit(repo_root, trusted_ref)
        own = _from_commit(repo_root, commit, inside)
        where = f"{inside or '.'}@{trusted_ref}"
    else:
        own = _from_disk(directory)
        where = str(directory)
    if not own:
        raise SastError(f"--sast-rules {where}: no .yaml or .yml rule file there")
    return SastRules(tuple(files + own), f"bundled + {where}")


def bundled_file(path: Path) -> RuleFile:
    return RuleFile(f"bundled/{path.relative_to(BUNDLED).as_posix()}", path.read_bytes())


def user_directory(value: str, repo_root: Path) -> Path:
    """`value` as an absolute path: `~` expanded, a relative one taken from the repository root
    (the flag's value was already made absolute against the working directory)."""
    path = Path(os.path.expanduser(value))
    return Path(os.path.abspath(path if path.is_absolute() else repo_root / path))


def _inside(directory: Path, repo_root: Path) -> str | None:
    """The directory's path inside the repository (as written, or once symlinks are resolved),
    or None when it is outside."""
    root = Path(os.path.abspath(repo_root))
    for candidate, base in ((directory, root), (directory.resolve(), root.resolve())):
        if candidate == base or candidate.is_relative_to(base):
            relative = candidate.relative_to(base).as_posix()
            return "" if relative == "." else relative
    return None


def _from_disk(directory: Path) -> list[RuleFile]:
    if not directory.is_dir():
        raise SastError(f"--sast-rules {directory}: not a directory")
    found = []
    for path in sorted(directory.rglob("*")):
        if path.suffix.lower() in SUFFIXES and path.is_file():
            data = path.read_bytes()
            _check_size(path.relative_to(directory).as_posix(), len(data), str(directory))
            relative = path.relative_to(directory).as_posix()
            found.append(RuleFile(f"user/{relative}", data, str(path)))
    _check_count(len(found), str(directory))
    return found


def _from_commit(repo_root: Path, commit: str, inside: str) -> list[RuleFile]:
    """The rule files under `inside` at `commit`: regular blobs only (a symlink is skipped)."""
    args = ["ls-tree", "-r", "-l", "-z", "--full-tree", commit, "--", inside or "."]
    try:
        listing = run_git(repo_root, args, options=["--literal-pathspecs"])
    except GitError as err:
        raise SastError(f"--sast-rules {inside}@{commit[:12]}: {err}") from None
    found = []
    for record in listing.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        name = os.fsdecode(raw)
        if not name.lower().endswith(SUFFIXES) or not meta.startswith(b"100"):
            continue
        size = meta.split()[3].decode()
        relative = name[len(inside) + 1 :] if inside else name
        _check_size(relative, int(size) if size.isdigit() else 0, f"{inside}@{commit[:12]}")
        data = read_blob(repo_root, commit, name) or b""
        found.append(RuleFile(f"user/{relative}", data, f"{name}@{commit[:12]}"))
    _check_count(len(found), f"{inside}@{commit[:12]}")
    return found


def _check_size(name: str, size: int, where: str) -> None:
    if size > MAX_RULE_FILE_BYTES:
        raise SastError(f"--sast-rules {where}: {name} is larger than {MAX_RULE_FILE_BYTES} bytes")


def _check_count(count: int, where: str) -> None:
    if count > MAX_RULE_FILES:
        raise SastError(f"--sast-rules {where}: more than {MAX_RULE_FILES} rule files")


def _ids(item: RuleFile) -> tuple[str, ...]:
    return _declared_ids(item.shown or item.name, item.data)


@lru_cache(maxsize=256)  # keyed by content: the bundled rules are parsed once per process
def _declared_ids(name: str, data: bytes) -> tuple[str, ...]:
    try:
        document = yaml.load(data, Loader=SafeLoader)
    except yaml.YAMLError as err:
        problem = " ".join(str(err).split())[:200]
        raise SastError(f"--sast-rules: {name} is not valid YAML: {problem}") from None
    rules = document.get("rules") if isinstance(document, dict) else None
    if not isinstance(rules, list):
        raise SastError(f"--sast-rules: {name} has no `rules:` list (semgrep rule format)")
    return tuple(str(rule["id"]) for rule in rules if isinstance(rule, dict) and "id" in rule)
