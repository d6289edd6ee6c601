"""What a warm process's code was loaded from, so that an upgrade in place is never served by
old code: it checks this before each hand-over, and exits instead when anything changed.

Built once, after every import, from the modules the process actually imported (wherever they
came from: the standard library, purelib and platlib, the user site, `PYTHONPATH`, an editable
install) and from every file of our own packages (sources and data: templates, JSON, SKILL.md):
- each file of our packages by its inode, size and mtime (an edit in place shows there);
- each directory a module was imported from, and each `sys.path` entry, by its mtime: an
  installer removes and writes files (an upgrade, a reinstall, a new or removed distribution),
  which changes the mtime of their directory. When the mtime changed, the directory's listing is
  compared again, entry by entry: what Python imports or reads to import (modules, extensions,
  `.pth` files by inode, size and mtime; subdirectories, such as packages and `.dist-info`, by
  inode), leaving aside byte-code caches (one written by a later import is not a change of code)
  and dot-names (a checkout's `.git` on an editable install's path). Our own packages' directories
  are compared on every entry, data files included.
A file of a dependency edited in place by hand (no installer) is not seen: `reviewflow server
stop` then. Checking costs a few hundred `stat` calls (~1 ms here, measured in bench/handover.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]
_PACKAGES = ("flows", "tasks", "reviewflow")
_CACHE = "__pycache__"
Key = tuple[int, int, int]
Listing = dict[str, Key]


def _key(path: str) -> Key | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


_IMPORTED = (".py", ".pyc", ".so", ".pyd", ".pth", ".egg-link", ".zip", ".egg")


def _listing(path: str, every: bool) -> Listing | None:
    """What in the directory `path` makes code (everything with `every`: our packages)."""
    listing: Listing = {}
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name == _CACHE or (not every and entry.name.startswith(".")):
                    continue
                info = entry.stat(follow_symlinks=False)
                if every or not entry.is_dir(follow_symlinks=False):
                    if every or entry.name.endswith(_IMPORTED):
                        listing[entry.name] = (info.st_ino, info.st_size, info.st_mtime_ns)
                else:
                    listing[entry.name] = (info.st_ino, 0, 0)
    except OSError:
        return None
    return listing


class CodeManifest:
    """The files and directories a process's code came from, as they were when it was built."""

    def __init__(
        self, files: Iterable[str], directories: Iterable[str], ours: Iterable[str] = ()
    ) -> None:
        self.files = {path: _key(path) for path in sorted(set(files))}
        self.ours = frozenset(ours)
        self.directories = {
            path: (_mtime(path), _listing(path, path in self.ours))
            for path in sorted({*directories, *self.ours})
        }

    @classmethod
    def of_this_process(cls, root: Path = _PACKAGE_ROOT) -> CodeManifest:
        """The modules imported so far, our packages' files under `root`, and `sys.path`."""
        packages = [str(root / package) for package in _PACKAGES]
        files, ours = _package_files(packages)
        directories = {entry for entry in sys.path if entry and os.path.isdir(entry)}
        for module in list(sys.modules.values()):
            origin = getattr(module, "__file__", None)
            if isinstance(origin, str) and not origin.startswith(tuple(packages)):
                directories.add(os.path.dirname(os.path.abspath(origin)))
        return cls(files, directories, ours)

    def changed(self) -> str | None:
        """The first file or directory whose code changed since the manifest was built."""
        for path, key in self.files.items():
            if _key(path) != key:
                return path
        for path, (mtime, listing) in self.directories.items():
            now = _mtime(path)
            if now == mtime:
                continue
            if _listing(path, path in self.ours) != listing:
                return path
            self.directories[path] = (now, listing)  # nothing that makes code changed there
        return None


def _package_files(roots: list[str]) -> tuple[list[str], set[str]]:
    """Every file (sources and data) and directory of our packages, caches left out."""
    files: list[str] = []
    directories: set[str] = set()
    for root in roots:
        for directory, subdirs, names in os.walk(root):
            subdirs[:] = [name for name in subdirs if name != _CACHE]
            directories.add(directory)
            files.extend(os.path.join(directory, name) for name in names)
    return files, directories
