"""Path policy (seed 000 §8.2): every model-supplied path is resolved against the root.

Refused outright (PolicyDenied): NUL bytes, empty paths, Windows drive and UNC forms, device
and other special files, symlinks that lead out of the root. Outside the root (``..``,
absolute paths): PATH_OUTSIDE_ROOT, which the policy engine turns into an approval request;
the error's ``data["path"]`` holds the resolved target so the engine can name it.

The returned ``path`` is always the fully resolved target, with no symlink left in it. The
file tools open exactly that path beneath a directory fd with every symlink refused
(``xclaw.tools._safe_open``), so a folder swapped for a link after this check makes the open
fail instead of reaching outside. Every OSError met here becomes a coded refusal (PATH_INVALID,
or PATH_CHANGED when the filesystem changed under the check), never an uncaught exception.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from xclaw.core.errors import PolicyDenied

# C:\x  C:/x  c:x  \\server\share  //server/share  \\?\  \\.\  \??\  and root-relative \x
_WINDOWS_FORM = re.compile(r"^(?:[A-Za-z]:|\\|//[^/])")
# Kernel views and device trees: never regular project data, even when a grant covers them.
_SPECIAL_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))
# What realpath raises when a link it just saw is gone or no link any more (readlink after
# lstat): the tree changed under the check, so a retry may well succeed.
_CHANGED_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ESTALE})


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    path: Path  # absolute, symlinks resolved
    rel: str  # relative to the root ("." for the root), or absolute when under a grant
    inside_root: bool
    # Hard links of a regular-file target; 0 when it is missing or a folder (folders cannot be
    # hard-linked, their count is only their subfolders). Above 1, another name, maybe outside
    # the root, shares the content.
    nlink: int = 0


def _deny(code: str, message: str, hint: str, path: Path | None = None) -> PolicyDenied:
    err = PolicyDenied(message, code=code, hint=hint)
    if path is not None:
        err.data["path"] = str(path)
    return err


def check_syntax(raw: str) -> None:
    """Refuse paths that are malformed before touching the filesystem."""
    if "\x00" in raw:
        raise _deny("PATH_INVALID", "The path contains a NUL byte.", "Remove the NUL byte.")
    if not raw or not raw.strip():
        raise _deny("PATH_INVALID", "The path is empty.", "Give a path relative to the root.")
    if _WINDOWS_FORM.match(raw):
        raise _deny(
            "PATH_INVALID",
            f"Windows drive and UNC paths are not accepted: {raw!r}.",
            "Use a path relative to the project root, with forward slashes.",
        )
    if raw == "~" or raw.startswith("~/"):
        raise _deny(
            "PATH_INVALID",
            f"{raw!r} starts with '~', which is not expanded.",
            "Use a path relative to the project root.",
        )


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def os_refusal(err: OSError, raw: str) -> PolicyDenied:
    """The coded refusal for an OSError met while checking ``raw``."""
    if err.errno in _CHANGED_ERRNOS:
        return _deny(
            "PATH_CHANGED",
            f"{raw!r} changed while it was being checked.",
            "Retry; if it keeps happening, something is changing that folder right now.",
        )
    return _deny(
        "PATH_INVALID",
        f"{raw!r} cannot be resolved: {err.strerror or type(err).__name__}.",
        "Check the path and the permissions of its folders.",
    )


def _realpath(path: str | Path, raw: str) -> Path:
    """os.path.realpath with its OSError coded (a link swapped mid-walk, a vanished cwd)."""
    try:
        return Path(os.path.realpath(path))
    except OSError as err:
        raise os_refusal(err, raw) from None


def resolve_inside_root(
    raw: str,
    root: Path,
    *,
    extra_roots: tuple[Path, ...] = (),
    write: bool = False,
    must_exist: bool = False,
) -> ResolvedPath:
    """Resolve ``raw`` under ``root`` (or a granted extra root), refusing every escape.

    ``write`` needs no extra handling: the target is resolved through any final symlink,
    and the caller writes to the resolved ``path``, never through the link.
    """
    check_syntax(raw)
    # realpath walks component by component, so "link/.." means what the OS means by it.
    real = _realpath(os.path.join(root, raw), raw)
    # That walk went through the root's own components first: a target resolved beneath the
    # root as given shows the root is its own realpath (a resolved path holds no link, and
    # it was checked just now), so it is resolved again only when the target is elsewhere.
    if not _within(real, root):
        root = _realpath(root, raw)
    # the lexical form only tells a symlink escape apart from a plain outside path
    lexical = Path(os.path.normpath(os.path.join(root, raw)))
    st, problem = _inspect(real, raw)
    exists = st is not None
    nlink = st.st_nlink if st is not None and stat.S_ISREG(st.st_mode) else 0
    inside = _within(real, root)
    if not inside:
        _check_outside(real, lexical, raw, root, extra_roots)
    if problem is not None:
        raise _deny("PATH_INVALID", f"{raw!r} cannot be inspected: {problem}.", "Check the path.")
    if must_exist and not exists:
        raise _deny("PATH_NOT_FOUND", f"{raw!r} does not exist.", "Check the path.")
    if not inside:
        return ResolvedPath(real, str(real), False, nlink)
    rel = real.relative_to(root).as_posix() if real != root else "."
    return ResolvedPath(real, rel, True, nlink)


def _check_outside(
    real: Path, lexical: Path, raw: str, root: Path, extra_roots: tuple[Path, ...]
) -> None:
    """Return when a grant covers ``real``; otherwise raise the matching refusal."""
    if any(_within(real, t) for t in _SPECIAL_TREES):
        raise _special(raw)
    if any(_within(real, _realpath(r, raw)) for r in extra_roots):
        return
    if _within(lexical, root):
        raise _deny(
            "PATH_SYMLINK_ESCAPE",
            f"{raw!r} leads outside the root through a symbolic link.",
            "Work on files inside the project; symlinks out of it are refused.",
        )
    raise _deny(
        "PATH_OUTSIDE_ROOT",
        f"{raw!r} is outside the project root.",
        "Use a path inside the project, or ask the user to approve access.",
        path=real,
    )


def _inspect(real: Path, raw: str) -> tuple[os.stat_result | None, str | None]:
    """(stat or None when missing, problem). Special files are refused at once, wherever."""
    try:
        st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as err:  # ELOOP, EACCES: reported after the containment check
        return None, err.strerror or type(err).__name__
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise _special(raw)
    return st, None


def _special(raw: str) -> PolicyDenied:
    return _deny(
        "PATH_SPECIAL",
        f"{raw!r} is a device, socket, pipe or kernel file; only regular files and folders "
        "are allowed.",
        "Use a regular file inside the project.",
    )


_SECRET_NAMES = frozenset(
    {
        ".env",
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        "credentials.json",
        ".pgpass",
        ".htpasswd",
    }
)
_SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx")
_SECRET_PREFIXES = ("id_rsa", "id_ed25519", "id_ecdsa", "id_dsa")
_SECRET_DIRS = frozenset({".ssh", ".gnupg"})
# Checked-in templates document variable names, not values.
_ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
_SECRET_IN_DIR = {
    ".aws": {"credentials", "config"},
    ".kube": {"config"},
    ".docker": {"config.json"},
}


def is_secret_path(rel: str) -> bool:
    """True for credential-like files: .env, keys, registry tokens, anything under .ssh/."""
    parts = [p.lower() for p in PurePosixPath(rel.replace("\\", "/")).parts if p not in ("/", ".")]
    if not parts:
        return False
    if any(p in _SECRET_DIRS for p in parts):
        return True
    name = parts[-1]
    if name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES):
        return True
    if name.startswith(_SECRET_PREFIXES):
        return True
    if name.startswith(".env.") and name not in _ENV_TEMPLATES:
        return True
    return len(parts) >= 2 and name in _SECRET_IN_DIR.get(parts[-2], set())


# --- paths hidden in command arguments -------------------------------------------------

# Harmless system paths many commands take as arguments.
_HARMLESS = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_GLUED_PATH = re.compile(r"^-[A-Za-z]+[@<]?(?P<path>(?:/|~/|\.\./).*)$")


def _path_candidates(arg: str) -> list[str]:
    out = [arg] if not arg.startswith("-") else []
    if "=" in arg:  # --prefix=/usr, of=/dev/sda, PREFIX=../x
        out.append(arg.split("=", 1)[1])
    m = _GLUED_PATH.match(arg)
    if m:  # -I/usr/include, -o../out, -d@/etc/passwd
        out.append(m.group("path"))
    # Read from a file by a sigil or scheme: @file (curl -d, response files), <file (curl -F),
    # file:///x (curl, browsers).
    out += [c[1:] for c in out if c[:1] in ("@", "<")]
    out += [_file_url_path(c) for c in out if c[:5].lower() == "file:"]
    return [c for c in out if c]


def _file_url_path(url: str) -> str:
    try:
        return unquote(urlsplit(url).path)
    except ValueError:  # a malformed address names no file curl could open either
        return ""


def _reach(candidate: str, base: Path) -> Path | None:
    """Where ``candidate`` points when used as a path, or None when it is no path at all."""
    if candidate in _HARMLESS or "\x00" in candidate:  # the tool itself refuses NUL bytes
        return None
    if candidate == "~" or candidate.startswith("~/"):
        candidate = os.path.expanduser(candidate)
    if candidate.startswith("/"):
        first = candidate.lstrip("/").split("/", 1)[0]
        # "/api/users" in a grep pattern is no path: only existing top-level trees count.
        return _realpath(candidate, candidate) if first and os.path.lexists("/" + first) else None
    joined = os.path.join(base, candidate)
    parts = candidate.replace("\\", "/").split("/")
    if ".." in parts or os.path.lexists(joined):  # existing names may be symlinks out
        return _realpath(joined, candidate)
    return None


def find_outside_paths(
    argv: Sequence[str],
    root: Path,
    *,
    cwd: Path | None = None,
    extra_roots: Sequence[Path] = (),
) -> list[tuple[str, Path]]:
    """(argument, resolved path) for each argument that reaches outside root and grants.

    Raises PolicyDenied (PATH_INVALID or PATH_CHANGED) when a path cannot be resolved.
    """
    real_root = _realpath(root, str(root))
    base = _realpath(cwd, str(cwd)) if cwd is not None else real_root
    allowed = [real_root, *(_realpath(r, str(r)) for r in extra_roots)]
    out: list[tuple[str, Path]] = []
    for arg in argv:
        for cand in _path_candidates(arg):
            p = _reach(cand, base)
            if p is not None and not any(_within(p, a) for a in allowed):
                out.append((arg, p))
                break
    return out
