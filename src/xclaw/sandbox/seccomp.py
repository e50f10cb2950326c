"""The system-call filter every bubblewrap command runs under (``bwrap --seccomp FD``).

The user namespace and ``--cap-drop ALL`` already take every privilege away; the filter
closes what a process without privileges may still reach, and what a root-run xclaw's
commands could do to the host's own files (they act as the host's uid 0 on them):

- mounts and the mount API, ``pivot_root``, ``chroot``; new namespaces (``unshare``,
  ``setns``, ``clone`` with a ``CLONE_NEW*`` flag; ``clone3`` answers ENOSYS so the C
  library falls back to ``clone``, whose flags can be read);
- file handles (``open_by_handle_at`` reads any file of a mounted file system);
- keyrings, ``bpf``, ``perf_event_open``, ``userfaultfd``, kernel modules, ``kexec``,
  reboot, swap, clock and accounting calls, ``syslog``;
- ``ptrace`` attach/seize (a child may still ask to be traced) and cross-process memory;
- ``ioctl`` TIOCSTI / TIOCLINUX (typing into the user's terminal);
- setuid or setgid bits: ``chmod`` family, ``open``/``creat``/``mknod`` with such a mode,
  and device nodes; ``openat2`` answers ENOSYS (its mode sits in a struct a filter cannot
  read; programs fall back to ``openat``).

Built once per process with libseccomp (``pyseccomp``, a ctypes binding: libseccomp's own
Python module is not on PyPI) and exported as classic BPF; ``None`` when libseccomp is
missing, which ``doctor`` and the live view report.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile
from typing import Any

DENIED = (
    "mount umount umount2 pivot_root chroot move_mount open_tree fsopen fsconfig fsmount"
    " fspick mount_setattr unshare setns open_by_handle_at name_to_handle_at keyctl add_key"
    " request_key bpf perf_event_open userfaultfd init_module finit_module delete_module"
    " kexec_load kexec_file_load reboot swapon swapoff acct settimeofday clock_settime"
    " clock_adjtime syslog quotactl vhangup iopl ioperm process_vm_readv process_vm_writev"
    " lookup_dcookie nfsservctl uselib fanotify_init"
).split()
NOT_IMPLEMENTED = ("clone3", "openat2")
# Syscalls newer than the libseccomp on Debian 12 knows; same number on x86_64 and arm64.
_FCHMODAT2 = 452
# CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NEW = (0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000)
_PTRACE_ATTACH, _PTRACE_SEIZE = 16, 0x4206
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_SETID_BITS = (0o4000, 0o2000)
_S_IFMT, _S_IFCHR, _S_IFBLK = 0o170000, 0o020000, 0o060000
_O_CREAT, _O_TMPFILE = 0o100, 0o20000000
# (syscall, index of its mode argument, index of its flags argument or None)
_MODE_CALLS = (
    ("chmod", 1, None),
    ("fchmod", 1, None),
    ("fchmodat", 2, None),
    ("creat", 1, None),
    ("open", 2, 1),
    ("openat", 3, 2),
    ("mknod", 1, None),
    ("mknodat", 2, None),
)


@functools.cache
def filter_program() -> bytes | None:
    """The filter as BPF bytes, or None when libseccomp cannot be loaded here."""
    try:
        import pyseccomp as sc  # type: ignore[import-untyped]
    except (ImportError, RuntimeError, OSError):
        return None
    flt = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        _add(flt, eperm, name)
    for name in NOT_IMPLEMENTED:
        _add(flt, sc.ERRNO(errno.ENOSYS), name)
    for flag in _CLONE_NEW:
        _add(flt, eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for request in (_PTRACE_ATTACH, _PTRACE_SEIZE):
        _add(flt, eperm, "ptrace", sc.Arg(0, sc.EQ, request))
    for request in (_TIOCSTI, _TIOCLINUX):
        _add(flt, eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    _add_mode_rules(sc, flt, eperm)
    return _export(flt)


def _add_mode_rules(sc: Any, flt: Any, eperm: int) -> None:
    calls: list[tuple[str | int, int, int | None]] = [*_MODE_CALLS, (_FCHMODAT2, 2, None)]
    for name, mode_arg, flags_arg in calls:
        for bit in _SETID_BITS:
            mode = sc.Arg(mode_arg, sc.MASKED_EQ, bit, bit)
            if flags_arg is None:
                _add(flt, eperm, name, mode)
                continue
            for creating in (_O_CREAT, _O_TMPFILE):
                _add(flt, eperm, name, sc.Arg(flags_arg, sc.MASKED_EQ, creating, creating), mode)
        if name in ("mknod", "mknodat"):
            for kind in (_S_IFCHR, _S_IFBLK):
                _add(flt, eperm, name, sc.Arg(mode_arg, sc.MASKED_EQ, _S_IFMT, kind))


def _add(flt: Any, action: int, name: str | int, *args: Any) -> None:
    try:
        flt.add_rule(action, name, *args)
    except (OSError, ValueError):
        pass  # a syscall this architecture does not have (open on arm64): nothing to refuse


def _export(flt: Any) -> bytes:
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def program_fd() -> int | None:
    """A fresh readable fd holding the filter, for one ``bwrap --seccomp FD`` (bwrap reads
    it to the end, so every launch needs its own); the caller closes it after the spawn."""
    program = filter_program()
    if program is None:
        return None
    fd = os.memfd_create("xclaw-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
