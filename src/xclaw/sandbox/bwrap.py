"""The default sandbox on Linux: every command in its own bubblewrap container.

What a command sees (in this order, later mounts on top):

- the system read-only (``/usr``, ``/etc`` minus password hashes and host keys, ``/opt``),
  a fresh ``/dev``, a fresh ``/proc`` of its own PID namespace, a private ``/tmp``;
- an empty, private home folder; toolchains on ``PATH`` that live in the real home (such as
  ``~/.pyenv`` or ``~/.cargo``) read-only, with known credential files masked;
- the project root read-write, except ``.git/config``, ``.git/hooks`` and ``xclaw.yaml``;
- nothing else: not ``~/.ssh``, not other projects, not xclaw's data dir.

It runs with a cleared environment (the allow-list of ``sandbox.env``), a new session, dies
with its parent, and sits in the session's loopback-only network namespace (``netns``).
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from xclaw.core.sandbox import Mode
from xclaw.gitsafe import git_identity
from xclaw.policy.paths import is_secret_path
from xclaw.sandbox.base import CommandRequest, Launch
from xclaw.sandbox.env import child_environment
from xclaw.sandbox.limits import PidsGroup, SandboxLimits
from xclaw.sandbox.netns import SessionNetwork
from xclaw.sandbox.orphans import OWNER_VAR, owner_mark
from xclaw.sandbox.proctree import TAG_VAR
from xclaw.sandbox.protect import sealed_mounts
from xclaw.sandbox.seccomp import program_fd

SYSTEM_TREES = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Readable by root alone on the host; a root-run xclaw's commands act as the host's uid 0
# on files, so these are masked, and so is anything else under /etc others cannot read.
_ETC_MASKED = ("shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "ssl/private")
# The fresh /proc's sysctls and triggers, read-only (bwrap leaves /proc/sys writable by uid 0).
_PROC_READ_ONLY = tuple(
    w
    for p in ("/proc/sys", "/proc/sysrq-trigger")
    if os.path.exists(p)
    for w in ("--ro-bind", p, p)
)
UNPRIVILEGED_ID = 1000  # who a root-run command is inside its namespace
_SHARED_HOME_DIRS = frozenset({".local", ".config", ".cache"})  # bind the PATH entry only
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
_HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".config/gcloud",
    ".azure",
    ".password-store",
    ".local/share/keyrings",
)
_TOOL_ROOT_SECRETS = frozenset({"credentials", "credentials.toml", ".credentials.json"})


@functools.cache
def bwrap_problem(bwrap: str | None = None) -> str | None:
    """Why bubblewrap cannot confine commands here, or None when it works (checked once)."""
    path = bwrap or shutil.which("bwrap")
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    argv = [path, "--ro-bind", "/", "/", "--unshare-user", "--disable-userns", "--cap-drop"]
    argv += ["ALL", "--unshare-pid", "--unshare-net", "--die-with-parent"]
    try:
        out = subprocess.run(
            [*argv, "--", "/bin/true"], capture_output=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap could not run: {err}"
    if out.returncode != 0:
        detail = out.stderr.decode(errors="replace").strip().splitlines()
        return "bubblewrap cannot create namespaces here: " + (detail[-1] if detail else "?")
    return None


@dataclass(slots=True)
class BwrapOptions:
    read_only_paths: tuple[Path, ...] = ()  # extra folders the user wants visible
    env_passthrough: tuple[str, ...] = ()
    # Run every command as this (uid, gid) — seed 003's AGENT_RUN_UID/GID. bwrap and the
    # session network are started as that user, so bwrap must work unprivileged for it.
    run_as: tuple[int, int] | None = None
    hidden: tuple[Path, ...] = field(default_factory=tuple)  # data/config dirs to mask
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    identity: dict[str, str] = field(default_factory=dict)  # GIT_AUTHOR_NAME ... for commits


@functools.lru_cache(maxsize=4)
def _which_bwrap(_path_var: str) -> str | None:
    """``bwrap`` on ``PATH`` (keyed by its value): one scan per PATH, not one per session."""
    return shutil.which("bwrap")


class BwrapSandbox:
    """Implements ``LocalSandbox``; one per session (it owns the session's network)."""

    mode: Mode = "bwrap"

    def __init__(self, options: BwrapOptions | None = None, bwrap: str | None = None) -> None:
        self.options = options or BwrapOptions()
        if not self.options.identity:
            self.options.identity = git_identity()
        self.bwrap = bwrap or _which_bwrap(os.environ.get("PATH", "")) or "bwrap"
        self.network = SessionNetwork(self.bwrap, run_as=self.options.run_as)
        self._system_cache: dict[tuple[str, str, str], tuple[list[str], list[Path]]] = {}

    def launch(self, request: CommandRequest, *, tag: str, network: bool = False) -> Launch:
        env = child_environment(request.env, passthrough=self.options.env_passthrough)
        home = os.environ.get("HOME") or "/root"
        env.update({"HOME": home, "TMPDIR": "/tmp", TAG_VAR: tag})
        env.update(self.options.identity)  # git commit works inside, as the user
        # Every bind is a mount point; git must look past them for the repository.
        env["GIT_DISCOVERY_ACROSS_FILESYSTEM"] = "1"
        words = [self.bwrap, *self._namespaces(), *self._mounts(request, env, home)]
        words += ["--chdir", str(request.cwd), "--clearenv"]
        for key, value in sorted(env.items()):
            words += ["--setenv", key, value]
        fds: list[int] = []
        seccomp = program_fd()
        if seccomp is not None:
            words += ["--seccomp", str(seccomp)]
            fds.append(seccomp)
        words += ["--", request.executable, *request.argv]
        if not network:
            prefix, net_fds = self.network.enter_prefix()
            words = [*prefix, *words]
            fds.extend(net_fds)
        limits = self.options.limits
        # RLIMIT_NPROC binds every uid but the host's 0: only a root-run command needs a group
        root_run = self.options.run_as is None and os.geteuid() == 0
        group = PidsGroup.create(tag, limits.max_processes) if root_run else None
        bounds = limits.prefix(group.procs if group is not None else None)
        words = [*bounds, *_pdeathsig_prefix(), *words]
        return Launch(
            words[0],
            tuple(words),
            {TAG_VAR: tag, OWNER_VAR: owner_mark()},
            request.cwd,
            pass_fds=tuple(fds),
            signals_as_exit_codes=True,
            run_as=self.options.run_as,
            close_after_start=(seccomp,) if seccomp is not None else (),
            pids_group=group,
        )

    async def publish(self, url: str) -> str:
        """The address of a loopback ``url`` inside the sandbox as reached from the host."""
        parts = urlsplit(url)
        if parts.hostname not in _LOOPBACK or parts.port is None:
            return url
        host_port = await self.network.expose(parts.port)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{host_port}"))

    async def close(self) -> None:
        await self.network.close()

    def _system_mounts(
        self, path_var: str, home: str, program_dir: str
    ) -> tuple[list[str], list[Path]]:
        """Everything but the project: system trees, masks, home, toolchains."""
        words: list[str] = []
        visible: list[Path] = []
        for tree in SYSTEM_TREES:
            words += _mirror(tree)
            visible.append(Path(tree))
        lim = self.options.limits
        words += ["--dev", "/dev", "--proc", "/proc", *_PROC_READ_ONLY]
        words += ["--size", str(lim.tmp_bytes), "--tmpfs", "/tmp"]
        words += ["--size", str(lim.var_tmp_bytes), "--tmpfs", "/var/tmp"]
        for masked in _etc_masked():
            words += _mask(masked)
        home_path = Path(home)
        if home_path != Path("/") and not _under(home_path, visible):
            words += ["--size", str(lim.home_bytes), "--tmpfs", home]
        extra = _toolchains(path_var, home_path, visible)
        account_home = _account_home()
        if account_home is not None and account_home != home_path:
            extra += _toolchains(path_var, account_home, visible)
        extra += [Path(sys.prefix), Path(sys.base_prefix), *self.options.read_only_paths]
        extra.append(Path(program_dir))
        for path in _dedupe(extra):
            if _under(path, visible) or is_secret_path(str(path)) or not path.is_dir():
                continue
            if self.options.run_as is not None and not _open_to_others(path):
                continue  # bwrap runs as that user and could not reach it to mount it
            words += ["--ro-bind", str(path), str(path)]
            words += [w for secret in _tool_secrets(path) for w in _mask(secret)]
            visible.append(path)
        return words, visible

    def _namespaces(self) -> list[str]:
        """A user namespace of its own (no capability anywhere, no further namespaces) and
        the usual PID/IPC/UTS/cgroup ones."""
        uid, gid = self.inside_ids()
        words = ["--unshare-user", "--disable-userns", "--uid", str(uid), "--gid", str(gid)]
        words += ["--cap-drop", "ALL"]
        words += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        words += ["--die-with-parent", "--new-session"]
        return words

    def inside_ids(self) -> tuple[int, int]:
        """The ids a command has inside: the user's own, never root's."""
        uid, gid = self.options.run_as or (os.getuid(), os.getgid())
        return (uid or UNPRIVILEGED_ID, gid or UNPRIVILEGED_ID)

    def _mounts(self, request: CommandRequest, env: dict[str, str], home: str) -> list[str]:
        key = (env.get("PATH", ""), home, str(Path(request.executable).parent))
        cached = self._system_cache.get(key)
        if cached is None:  # the same for every command of a session: built once
            cached = self._system_mounts(*key)
            self._system_cache[key] = cached
        words, visible = list(cached[0]), list(cached[1])
        root = request.root
        words += ["--bind", str(root), str(root)]
        for granted in request.granted:  # a human opened these for the task
            if granted.exists() and not is_secret_path(str(granted)):
                words += ["--bind", str(granted), str(granted)]
        enclosing = _enclosing_git_dir(root)
        if enclosing is not None:  # a project inside a repository: git works, read-only
            words += ["--ro-bind", str(enclosing), str(enclosing)]
        gits, protected_paths = sealed_mounts(root)
        for git in gits:
            words += ["--bind", str(git), str(git)]
        for protected in protected_paths:
            words += ["--ro-bind", str(protected), str(protected)]
        home_secrets = [Path(home) / name for name in _HOME_SECRETS]
        for hidden in [*self.options.hidden, *home_secrets]:
            if _under(hidden, [*visible, root, *request.granted]):
                words += _mask(hidden)  # a project that holds them still must not show them
        return words


@functools.cache
def _pdeathsig_prefix() -> tuple[str, ...]:
    """Die with xclaw from the first instant (before bwrap sets its own parent-death signal);
    ``orphans.reap_orphans`` covers the instant before this takes hold."""
    setpriv = shutil.which("setpriv")
    return (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()


def _enclosing_git_dir(root: Path) -> Path | None:
    """The ``.git`` folder of the repository ``root`` lies in, when that is above ``root``."""
    if (root / ".git").exists():
        return None
    for parent in root.parents:
        candidate = parent / ".git"
        if candidate.is_dir() and not candidate.is_symlink():
            return candidate
    return None


@functools.cache
def _etc_masked() -> tuple[Path, ...]:
    """The known secret files of /etc, plus, when we are root, every entry there others may
    not read (looked for once per process, two levels deep)."""
    found = [Path("/etc") / name for name in _ETC_MASKED]
    if os.geteuid() != 0:
        return tuple(found)
    for folder in (Path("/etc"), *_subfolders(Path("/etc"))):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if not e.is_symlink() and not st.st_mode & 0o004:
                found.append(Path(e.path))
    return tuple(dict.fromkeys(found))


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _mirror(tree: str) -> list[str]:
    """Mount a system tree read-only as the host has it (merged-/usr links stay links)."""
    if os.path.islink(tree):
        return ["--symlink", os.readlink(tree), tree]
    if os.path.isdir(tree):
        return ["--ro-bind", tree, tree]
    return []


def _mask(path: Path) -> list[str]:
    if path.is_dir() and not path.is_symlink():
        return ["--tmpfs", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


def _under(path: Path, trees: Iterable[Path]) -> bool:
    # Strings, not Path.parents: this runs for every mount of every command.
    p = str(path)
    return any(p == str(t) or p.startswith(str(t).rstrip("/") + "/") for t in trees)


def _dedupe(paths: Sequence[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for p in paths:
        try:
            seen[Path(os.path.realpath(p))] = None
        except OSError:
            continue
    return list(seen)


def _toolchains(path_var: str, home: Path, visible: list[Path]) -> list[Path]:
    """Folders to show for the PATH entries that live outside the system trees: for one in
    the home folder, its top folder there (``~/.pyenv/shims`` → ``~/.pyenv``)."""
    out: list[Path] = []
    for entry in path_var.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if _under(real, visible):
            continue
        if home != Path("/") and home in real.parents:
            top = home / real.relative_to(home).parts[0]
            out.append(real if top.name in _SHARED_HOME_DIRS else top)
        else:
            out.append(real)
    return out


def _open_to_others(path: Path) -> bool:
    """Whether any user can reach ``path`` (every folder on the way searchable by others)."""
    try:
        for folder in [path, *path.parents]:
            if not os.stat(folder).st_mode & 0o001:
                return False
    except OSError:
        return False
    return True


def _account_home() -> Path | None:
    """The account's own home folder, which toolchains on PATH live in even when HOME is
    set elsewhere."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None


def _tool_secrets(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [folder / n for n in names if n in _TOOL_ROOT_SECRETS or is_secret_path(n)]
