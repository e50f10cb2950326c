"""Open checked paths beneath a directory fd without following a single symlink (Linux).

Hand-written because no library offers openat2(2) or a no-symlink openat walk for Python.

The policy layer checks a fully resolved path (``ResolvedPath``: no symlink left in it); the
tools then open exactly that path relative to an fd of the root, refusing every symlink on the
way. A folder swapped for a link between the check and the open makes the open fail (ELOOP,
EXDEV, or ENOTDIR on a link) with PATH_CHANGED instead of reaching outside. ``openat2`` with
RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS does it in one syscall; where the
kernel lacks it (ENOSYS before 5.6, EPERM from a seccomp filter) a component-by-component walk
with O_NOFOLLOW is just as strict. The base folder itself is opened the same way from ``/``, so
no link anywhere along the absolute path is followed.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import sys
from pathlib import Path
from typing import Any

from xclaw.core.errors import PolicyDenied
from xclaw.core.tooling import Grant
from xclaw.policy.paths import ResolvedPath
from xclaw.tools.base import ToolContext

_SYS_OPENAT2 = 437  # one number on every Linux architecture since 5.6
# RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH
_RESOLVE = 0x02 | 0x04 | 0x08
_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# A folder to open more names beneath: no read access needed, no link followed.
DIR_FLAGS = _O_PATH | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
# Errors that mean a link (or a mount trick) was met where the checked path had none.
_CHANGED = frozenset({errno.ELOOP, errno.EXDEV, errno.EAGAIN})


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


def path_changed(rel: str) -> PolicyDenied:
    return PolicyDenied(
        f"The path {rel!r} changed while it was being opened (a folder or file was replaced "
        "by a link).",
        code="PATH_CHANGED",
        hint="Retry; if it keeps happening, something is replacing folders in the project.",
    )


def probe_openat2(syscall: Any) -> bool:
    """True when ``syscall`` (libc's) runs openat2 here; any failure means: walk instead."""
    top = os.open("/", DIR_FLAGS)
    try:
        how = _OpenHow(DIR_FLAGS, 0, _RESOLVE)
        fd = _raw_openat2(syscall, top, ".", how)
    finally:
        os.close(top)
    if fd < 0:
        return False  # ENOSYS (kernel before 5.6), EPERM (seccomp), EINVAL: all fall back
    os.close(fd)
    return True


@functools.cache
def _libc_syscall() -> Any | None:
    """libc's ``syscall`` when this kernel runs openat2, else None; probed once a process."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    return fn if probe_openat2(fn) else None


def openat2_available() -> bool:
    return _libc_syscall() is not None


def _raw_openat2(syscall: Any, dir_fd: int, rel: str, how: _OpenHow) -> int:
    """The fd, or minus one with the errno left in ctypes; EINTR is retried, as os.open does."""
    while True:
        fd = int(
            syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dir_fd),
                ctypes.c_char_p(os.fsencode(rel)),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0 or ctypes.get_errno() != errno.EINTR:
            return fd


def _openat2(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    # openat2 refuses a mode without O_CREAT, unlike openat, which ignores it.
    how = _OpenHow(flags | _O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE)
    fd = _raw_openat2(_libc_syscall(), dir_fd, rel, how)
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), rel)
    return fd


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.startswith("/") or ".." in parts:
        # A checked path is relative and resolved; anything else is a caller's bug.
        raise PolicyDenied(
            f"{rel!r} is not a resolved relative path.",
            code="PATH_INVALID",
            hint="Give a path relative to the project root.",
        )
    return parts


def _changed_kind(dir_fd: int, name: str) -> bool:
    """After ENOTDIR: a link there now, or a folder again (a link a moment ago)."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return False
    return stat.S_ISLNK(mode) or stat.S_ISDIR(mode)


def _open_entry(dir_fd: int, name: str, flags: int, mode: int = 0) -> int:
    """openat of one name. O_NOFOLLOW|O_DIRECTORY on a link fails ENOTDIR; call it ELOOP."""
    try:
        return os.open(name, flags | _O_NOFOLLOW | _O_CLOEXEC, mode, dir_fd=dir_fd)
    except NotADirectoryError:
        if _changed_kind(dir_fd, name):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _walk(dir_fd: int, parts: list[str], flags: int, mode: int) -> int:
    fd = os.open(".", DIR_FLAGS, dir_fd=dir_fd)  # our own fd: the caller's stays open
    try:
        for part in parts[:-1]:
            inner = _open_entry(fd, part, DIR_FLAGS)
            os.close(fd)
            fd = inner
        return _open_entry(fd, parts[-1] if parts else ".", flags, mode)
    finally:
        os.close(fd)


def open_beneath(dir_fd: int, rel: str, flags: int, mode: int = 0) -> int:
    """Open ``rel`` (resolved, relative) beneath ``dir_fd``; any symlink on the way refuses.

    Raises PolicyDenied PATH_CHANGED for a link, OSError for everything else (ENOENT, ...).
    """
    parts = _parts(rel)
    try:
        if openat2_available():
            try:
                return _openat2(dir_fd, "/".join(parts) or ".", flags, mode)
            except NotADirectoryError:
                pass  # a link where a folder was, or a file in the way: the walk tells which
        return _walk(dir_fd, parts, flags, mode)
    except OSError as err:
        if err.errno in _CHANGED:
            raise path_changed(rel) from None
        raise


def open_path(path: Path, flags: int) -> int:
    """Open the absolute, resolved ``path`` from ``/`` without following any link."""
    top = os.open("/", DIR_FLAGS)
    try:
        return open_beneath(top, path.as_posix().lstrip("/") or ".", flags)
    finally:
        os.close(top)


def make_dirs(dir_fd: int, rel: str) -> int:
    """mkdir -p ``rel`` beneath ``dir_fd``, never through a link; returns the last folder's fd."""
    parts = _parts(rel)
    fd = os.open(".", DIR_FLAGS, dir_fd=dir_fd)
    try:
        for part in parts:
            try:
                os.mkdir(part, 0o777, dir_fd=fd)  # 0o777 minus the umask, like mkdir(1)
            except FileExistsError:
                pass
            inner = _open_entry(fd, part, DIR_FLAGS)
            os.close(fd)
            fd = inner
    except OSError as err:
        os.close(fd)
        if err.errno in _CHANGED:
            raise path_changed(rel) from None
        raise
    return fd


# --- the tools' view: which folder a checked path is opened beneath ---------------------


def base_of(ctx: ToolContext, target: ResolvedPath) -> tuple[Path, str]:
    """The folder to open ``target`` beneath (the root, or the granted root holding it) and
    its path relative to that folder."""
    if target.inside_root:
        return ctx.root, target.rel
    path = target.path
    granted = (*ctx.workspace.extra_roots(), *ctx.once_roots)
    holders = [r for r in granted if r != path and r in path.parents]
    # A grant of the file itself (allow once) has no folder: open it beneath its parent.
    base = max(holders, key=lambda r: len(r.parts), default=path.parent)
    return base, path.relative_to(base).as_posix()


def open_in(ctx: ToolContext, target: ResolvedPath, flags: int) -> int:
    """Open the checked ``target`` with ``flags``, beneath its root, following no link."""
    base, rel = base_of(ctx, target)
    top = open_path(base, DIR_FLAGS)
    try:
        return open_beneath(top, rel, flags)
    finally:
        os.close(top)


def parent_in(ctx: ToolContext, target: ResolvedPath, *, create: bool = False) -> tuple[int, str]:
    """(fd of the folder holding ``target``, its last name); ``create`` makes missing folders."""
    base, rel = base_of(ctx, target)
    folder, _, name = rel.rpartition("/")
    if name in ("", "."):
        raise IsADirectoryError(errno.EISDIR, "the root itself is a folder", target.rel)
    top = open_path(base, DIR_FLAGS)
    try:
        try:
            return open_beneath(top, folder or ".", DIR_FLAGS), name
        except FileNotFoundError:
            if not create:
                raise
        return make_dirs(top, folder), name
    finally:
        os.close(top)


def approved(ctx: ToolContext, path: Path) -> bool:
    """A human approved this exact file: granted for the task, or allowed for this call."""
    return Grant("path", str(path)) in ctx.workspace.grants or path in ctx.once_roots


def refuse_hardlink(ctx: ToolContext, st: os.stat_result, path: Path, raw: str) -> None:
    """Checked on the opened file itself, so a link made after the policy check still counts."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and not approved(ctx, path):
        raise PolicyDenied(
            f"{raw!r} is a hard link: {st.st_nlink} names share its content, and another of "
            "them may be outside the project.",
            code="PATH_HARDLINK",
            hint="Ask the user to approve this exact file, or work on a copy of it.",
        )
