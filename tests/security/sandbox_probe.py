"""Run inside the sandbox by test_sandbox_attacks: ``python3 sandbox_probe.py CASE``.

Prints ``BLOCKED <errno name>`` when the kernel refused the attempt, ``ALLOWED`` when it went
through, or a value for the read-only probes. Standard library only (it runs in the
sandbox's own Python); syscall numbers for x86_64 and arm64.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import subprocess
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {
    "x86_64": {
        "keyctl": 250, "add_key": 248, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "init_module": 175, "finit_module": 313, "kexec_load": 246,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "setns": 308, "pivot_root": 155,
        "clone": 56, "clone3": 435, "process_vm_readv": 310, "syslog": 103, "swapon": 167,
        "acct": 163, "settimeofday": 164, "chroot": 161, "fchmodat2": 452, "openat2": 437,
        "unshare": 272, "mount": 165, "umount2": 166, "fsopen": 430, "open_tree": 428,
    },
    "aarch64": {
        "keyctl": 219, "add_key": 217, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "init_module": 105, "finit_module": 273, "kexec_load": 104,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "setns": 268, "pivot_root": 41,
        "clone": 220, "clone3": 435, "process_vm_readv": 270, "syslog": 116, "swapon": 224,
        "acct": 89, "settimeofday": 170, "chroot": 51, "fchmodat2": 452, "openat2": 437,
        "unshare": 97, "mount": 40, "umount2": 39, "fsopen": 430, "open_tree": 428,
    },
}[platform.machine()]  # fmt: skip
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
SIGCHLD = 17


def sys_call(name: str, *args: int | bytes | None) -> None:
    ctypes.set_errno(0)
    r = libc.syscall(NR[name], *args)
    if r == 0 and name == "clone":
        os._exit(0)  # the child of a clone that was let through
    report(r)


def report(r: int) -> None:
    if r < 0:
        print("BLOCKED", errno.errorcode.get(ctypes.get_errno(), "?"))
    else:
        print("ALLOWED", r)


def os_call(fn, *args) -> None:  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except OSError as e:
        print("BLOCKED", errno.errorcode.get(e.errno or 0, "?"))
        return
    print("ALLOWED")


def write(path: str, text: str) -> None:
    os_call(lambda: open(path, "w").write(text))


def status(field: str) -> None:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            print(line.split(":", 1)[1].strip())


def main(case: str) -> None:  # noqa: C901 - one dispatch table, read top to bottom
    open("f.txt", "w").close()
    cases = {
        "capeff": lambda: status("CapEff"),
        "capbnd": lambda: status("CapBnd"),
        "nonewprivs": lambda: status("NoNewPrivs"),
        "seccomp": lambda: status("Seccomp"),
        "uid": lambda: print(os.getuid()),
        "mount-tmpfs": lambda: report(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        "umount-shadow-mask": lambda: report(libc.umount2(b"/etc/shadow", 2)),
        "remount-etc-rw": lambda: report(libc.mount(None, b"/etc", None, 0x20 | 0x1000, None)),
        "fsopen": lambda: sys_call("fsopen", b"tmpfs", 0),
        "open-tree": lambda: sys_call("open_tree", -100, b"/etc", 1),
        "pivot-root": lambda: sys_call("pivot_root", b"/tmp", b"/tmp"),
        "chroot": lambda: sys_call("chroot", b"/tmp"),
        "unshare-user": lambda: sys_call("unshare", CLONE_NEWUSER),
        "unshare-mount": lambda: sys_call("unshare", CLONE_NEWNS),
        "unshare-net": lambda: sys_call("unshare", CLONE_NEWNET),
        "clone-newuser": lambda: sys_call("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
        "clone3": lambda: sys_call("clone3", 0, 0),
        "setns": lambda: sys_call("setns", os.open("/proc/self/ns/net", os.O_RDONLY), 0),
        "open-by-handle": lambda: sys_call("open_by_handle_at", -100, 0, 0),
        "name-to-handle": lambda: sys_call("name_to_handle_at", -100, b"/etc", 0, 0, 0),
        "keyctl": lambda: sys_call("keyctl", 0, -3, 0),
        "add-key": lambda: sys_call("add_key", b"user", b"x", b"y", 1, -3),
        "bpf": lambda: sys_call("bpf", 0, 0, 0),
        "perf-event-open": lambda: sys_call("perf_event_open", 0, 0, -1, -1, 0),
        "userfaultfd": lambda: sys_call("userfaultfd", 0),
        "init-module": lambda: sys_call("init_module", 0, 0, b""),
        "finit-module": lambda: sys_call("finit_module", 0, b"", 0),
        "kexec-load": lambda: sys_call("kexec_load", 0, 0, 0, 0),
        "syslog-read": lambda: sys_call("syslog", 3, 0, 0),
        "swapon": lambda: sys_call("swapon", b"/tmp/x", 0),
        "acct": lambda: sys_call("acct", b"/tmp/x"),
        "settimeofday": lambda: sys_call("settimeofday", 0, 0),
        "process-vm-readv": lambda: sys_call("process_vm_readv", 1, 0, 0, 0, 0, 0),
        "ptrace-attach-init": lambda: report(libc.ptrace(16, 1, 0, 0)),
        "tiocsti": lambda: report(libc.ioctl(0, 0x5412, ctypes.byref(ctypes.c_char(b"x")))),
        "tioclinux": lambda: report(libc.ioctl(0, 0x541C, ctypes.byref(ctypes.c_char(b"\2")))),
        "chmod-setuid": lambda: os_call(os.chmod, "f.txt", 0o4755),
        "chmod-setgid": lambda: os_call(os.chmod, "f.txt", 0o2755),
        "fchmod-setuid": lambda: os_call(os.fchmod, os.open("f.txt", os.O_RDONLY), 0o4755),
        "fchmodat2-setuid": lambda: sys_call("fchmodat2", -100, b"f.txt", 0o4755, 0),
        "open-create-setuid": lambda: os_call(os.open, "s.bin", os.O_CREAT | os.O_WRONLY, 0o4755),
        "openat2": lambda: sys_call("openat2", -100, b"f.txt", 0, 0),
        "mknod-setuid-file": lambda: os_call(os.mknod, "m.bin", 0o104755),
        "mknod-block-device": lambda: os_call(os.mknod, "sda", 0o060600, os.makedev(8, 0)),
        "mknod-char-device": lambda: os_call(os.mknod, "mem", 0o020600, os.makedev(1, 1)),
        "core-pattern": lambda: write("/proc/sys/kernel/core_pattern", "|/tmp/pwn"),
        "sysctl-write": lambda: write("/proc/sys/kernel/hostname", "pwned"),
        "sys-write": lambda: write("/sys/kernel/uevent_helper", "/tmp/pwn"),
        "proc-sysrq": lambda: write("/proc/sysrq-trigger", "h"),
        "su-root": lambda: print(
            subprocess.run(["su", "-c", "id -u"], capture_output=True, text=True).stdout or "none"
        ),
    }
    cases[case]()


if __name__ == "__main__":
    main(sys.argv[1])
