"""Atomic file replacement: a reader sees the old content or the new, never half of either.

The new bytes go to a temporary file in the target's own directory (so ``os.replace`` is a
rename on one filesystem), are fsynced, then renamed over the target. A failure at any step
removes the temporary file and leaves the target as it was.

``atomic_write_at`` does the same inside a directory fd, naming only the file: the file tools
pin the folder with a no-symlink open first, so the write cannot land anywhere else.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

_TMP_SUFFIX = ".xclaw-tmp"
_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int | None = None, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` atomically.

    ``mode`` sets the permission bits; by default an existing file keeps its bits and a new
    file gets ``0o666`` minus the umask, exactly as ``open(path, "w")`` would. ``durable=False``
    skips the fsyncs, for scratch trees a crash throws away anyway (still atomic for readers).
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
    tmp = path.parent / _tmp_name(path.name)
    # O_EXCL on a random name: never clobbers or follows anything already there; 0o666 lets
    # the kernel apply the umask for new files.
    fd = os.open(tmp, _OPEN_FLAGS, 0o666)
    try:
        _fill(fd, data, mode, sync=durable)
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if durable:
        _fsync_dir(path.parent)


def atomic_write_at(dir_fd: int, name: str, data: bytes, *, mode: int | None = None) -> None:
    """Replace the entry ``name`` of the folder open as ``dir_fd`` with ``data`` atomically.

    ``name`` is one path component. Permission bits work as in ``atomic_write_bytes``; an
    existing symlink named ``name`` is never followed: the rename replaces the link itself.
    """
    if mode is None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
        except FileNotFoundError:
            mode = None
    tmp = _tmp_name(name)
    fd = os.open(tmp, _OPEN_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        _fill(fd, data, mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        _unlink_quietly(tmp, dir_fd)
        raise
    _fsync_dir(".", dir_fd)


def _tmp_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(4)}{_TMP_SUFFIX}"


def _fill(fd: int, data: bytes, mode: int | None, *, sync: bool = True) -> None:
    """Write all of ``data`` to the new temporary file, fsync it (``sync``), and close it."""
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: Path | str, dir_fd: int | None = None) -> None:
    try:
        os.unlink(path, dir_fd=dir_fd)
    except OSError:
        pass


def _fsync_dir(directory: Path | str, dir_fd: int | None = None) -> None:
    """Make the rename itself durable; some platforms cannot open a directory, which is fine."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(directory, flags, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
