"""Atomic file replacement: a reader sees the old content or the new, never half of either.

The new bytes go to a temporary file in the target's own directory (so ``os.replace`` is a
rename on one filesystem), are fsynced, then renamed over the target. A failure at any step
removes the temporary file and leaves the target as it was.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

_TMP_SUFFIX = ".xclaw-tmp"
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically.

    ``mode`` sets the permission bits; by default an existing file keeps its bits and a new
    file gets ``0o666`` minus the umask, exactly as ``open(path, "w")`` would.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
    # O_EXCL on a random name: never clobbers or follows anything already there; 0o666 lets
    # the kernel apply the umask for new files.
    fd = os.open(tmp, _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable; some platforms cannot open a directory, which is fine."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
