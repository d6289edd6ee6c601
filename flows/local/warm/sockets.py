"""The hand-over socket: where it lives, and who may use it (the same user only).

Whoever can connect to a warm process would get a process running as its owner, with the
arguments, environment, working directory and file descriptors they send. So, by construction:
- the socket lives in a directory of the user's own with mode 0700 (`$XDG_RUNTIME_DIR`, which
  is per user, or the temporary directory: `reviewflow-<uid>/` in either), checked on both
  sides whoever created it: the warm process does not serve from any other, a CLI does not
  hand over through any other;
- both ends check the other's uid on the connection itself (`SO_PEERCRED` on Linux,
  `LOCAL_PEERCRED` on macOS and the BSDs): the warm process refuses any other uid, and a CLI
  talks only to a process of its own uid, whatever the modes of the socket and its directory.
The path stays short (an `AF_UNIX` path has at most 107 bytes, 103 on macOS) whatever the
reviewflow home: its name is a hash of the Prefect home and the install.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import struct
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

MAX_PATH_BYTES = 103 if sys.platform == "darwin" else 107  # sun_path, less its final NUL
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]
_LOCAL_PEERCRED = 0x001  # macOS and the BSDs: getsockopt(SOL_LOCAL=0, LOCAL_PEERCRED)
_XUCRED = "=II"  # struct xucred: cr_version, cr_uid, then the groups (not read)
_XUCRED_SIZE = 76


def install_key() -> str:
    """This install (interpreter, environment, source tree): two installs sharing a reviewflow
    home keep a warm process each, instead of replacing each other's on every review."""
    text = f"{sys.executable}\0{sys.prefix}\0{_PACKAGE_ROOT}\0{sys.version}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def runtime_dir(env: Mapping[str, str]) -> Path:
    """The directory of this user's hand-over sockets: under `$XDG_RUNTIME_DIR` when it is set
    (absolute, a directory), else under the temporary directory."""
    base = env.get("XDG_RUNTIME_DIR", "")
    if not (os.path.isabs(base) and os.path.isdir(base)):
        base = tempfile.gettempdir()
    return Path(base) / f"reviewflow-{os.getuid()}"


def socket_path(env: Mapping[str, str], phome: Path, install: str) -> Path:
    """The hand-over socket of the warm process of `install` for the Prefect home `phome`."""
    key = hashlib.sha256(f"{phome}\0{install}".encode()).hexdigest()[:16]
    return runtime_dir(env) / f"warm-{key}.sock"


def path_problem(path: Path) -> str | None:
    """Why `path` cannot be a Unix socket's path (too long), or None."""
    size = len(os.fsencode(path))
    if size <= MAX_PATH_BYTES:
        return None
    return (
        f"the socket path {path} is {size} bytes, over the {MAX_PATH_BYTES} a Unix socket "
        "allows (set XDG_RUNTIME_DIR or TMPDIR to a shorter directory)"
    )


def private_dir_problem(path: Path) -> str | None:
    """Why `path` is not a private directory of this user (a directory, not a symlink, owned by
    this uid, mode 0700), or None when it is."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be used ({exc.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    if info.st_uid != os.getuid():
        return f"{path} belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})"
    if stat.S_IMODE(info.st_mode) != 0o700:
        return f"{path} has mode {stat.S_IMODE(info.st_mode):04o}, not 0700"
    return None


def make_private_dir(path: Path) -> str | None:
    """Create `path` (mode 0700) unless it exists; then why it is not private, or None."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass  # checked below, whoever made it
    except OSError as exc:
        return f"cannot create {path} ({exc.strerror})"
    else:
        os.chmod(path, 0o700)  # whatever the umask
    return private_dir_problem(path)


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of the Unix socket `conn`, or None where this
    platform cannot tell (then nothing is handed over)."""
    try:
        if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
            raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return int(struct.unpack("3i", raw)[1])
        if sys.platform == "darwin" or "bsd" in sys.platform:
            raw = conn.getsockopt(0, _LOCAL_PEERCRED, _XUCRED_SIZE)
            return int(struct.unpack_from(_XUCRED, raw)[1])
    except (OSError, struct.error):
        return None
    return None


def peer_pid(conn: socket.socket) -> int | None:
    """The pid at the other end of `conn` (Linux only; for the log), or None."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return int(struct.unpack("3i", raw)[0])
