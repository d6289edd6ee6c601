"""Where a review's reports go: review IDs, the per-review directory, output paths (000 §10)."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from datetime import UTC, datetime
from pathlib import Path, PurePath

from reviewflow.errors import OutputError
from reviewflow.fsutil import private_dirs

MAX_COLLISIONS = 1000
_NOT_NAME = re.compile(r"[^A-Za-z0-9._]+")
_MAX_NAME_BYTES = 200  # file systems take 255 bytes a name


def flatten_repo_path(repository: str | PurePath) -> str:
    """`/home/developer/projects/zadig` -> `home-developer-projects-zadig` (one safe name).
    Letters and digits of any script are kept (`/srv/café` -> `srv-café`); a name longer than
    a file system takes is cut and told apart by a hash of the whole path."""
    raw = os.fsencode(str(repository))
    text = unicodedata.normalize("NFC", raw.decode("utf-8", "replace"))
    parts = (_safe_part(part) for part in re.split(r"[/\\]", text))
    flat = "-".join(part for part in parts if part) or "repository"
    if len(flat.encode()) <= _MAX_NAME_BYTES:
        return flat
    digest = hashlib.sha256(raw).hexdigest()[:12]
    cut = flat.encode()[: _MAX_NAME_BYTES - 13].decode("utf-8", "ignore")
    return f"{cut}-{digest}"


def _safe_part(part: str) -> str:
    kept = "".join(c if c.isalnum() or c in "._" else "-" for c in part)
    return re.sub(r"-{2,}", "-", kept).strip("-.")


def review_id(started_at: datetime, diff_identity: str) -> str:
    """A review ID: the UTC second it started plus the diff's identity, e.g.
    `20261130T233500Z-3f2a9c1d`."""
    stamp = started_at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    identity = _NOT_NAME.sub("-", diff_identity).strip("-.")[:16]
    return f"{stamp}-{identity}" if identity else stamp


def reports_root(home: Path) -> Path:
    return home / "reports"


def create_review_dir(parent: Path, wanted_id: str) -> tuple[Path, str]:
    """Create `parent/<wanted_id>` (mode 0700), or `-2`, `-3`, ... when taken; returns the
    directory and the review ID it holds. Race-free: the directory is created exclusively."""
    try:
        private_dirs(parent)
    except OSError as exc:
        raise OutputError(f"cannot create report directory {parent}: {exc.strerror}") from None
    for n in range(1, MAX_COLLISIONS + 1):
        candidate = wanted_id if n == 1 else f"{wanted_id}-{n}"
        try:
            (parent / candidate).mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(
                f"cannot create report directory {parent / candidate}: {exc.strerror}"
            ) from None
        return parent / candidate, candidate
    raise OutputError(f"more than {MAX_COLLISIONS} reviews named {wanted_id} in {parent}")


def review_dir(
    home: Path,
    repository: str,
    wanted_id: str,
    report_dir: str | None = None,
    *,
    create: bool = True,
) -> tuple[Path, str]:
    """This review's directory and ID: `output.report_dir` as given when set (created if
    missing), else `<home>/reports/<flattened-repository>/<review-id>[-N]`. Without `create`
    (no report file goes there) nothing is created and the ID is the wanted one."""
    if not create:
        return Path(report_dir).expanduser() if report_dir else reports_root(home), wanted_id
    if report_dir:
        target = Path(report_dir).expanduser()
        try:
            private_dirs(target)
        except OSError as exc:
            raise OutputError(f"cannot create report directory {target}: {exc.strerror}") from None
        return target, wanted_id
    return create_review_dir(reports_root(home) / flatten_repo_path(repository), wanted_id)


def output_path(setting: str | None, directory: Path) -> str | None:
    """Where one report file goes: None when turned off (null or ""), `-` for stdout, an
    absolute path as given, a relative one inside the review's directory."""
    if setting is None or not setting.strip():
        return None
    if setting == "-":
        return "-"
    path = Path(setting).expanduser()
    return str(path if path.is_absolute() else directory / path)
