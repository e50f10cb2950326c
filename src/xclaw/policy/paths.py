"""Path policy (seed 000 §8.2): every model-supplied path is resolved against the root.

Refused outright (PolicyDenied): NUL bytes, empty paths, Windows drive and UNC forms, device
and other special files, symlinks that lead out of the root. Outside the root (``..``,
absolute paths): PATH_OUTSIDE_ROOT, which the policy engine turns into an approval request.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.errors import PolicyDenied

_WINDOWS_FORM = re.compile(r"^(?:[A-Za-z]:|\\\\|//[^/]|\\\?\\|\\\\\.\\)")


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    path: Path  # absolute, symlinks resolved
    rel: str  # relative to the root ("." for the root), or absolute when under a grant
    inside_root: bool


def _deny(code: str, message: str, hint: str) -> PolicyDenied:
    return PolicyDenied(message, code=code, hint=hint)


def check_syntax(raw: str) -> None:
    if not raw or not raw.strip():
        raise _deny("PATH_INVALID", "The path is empty.", "Give a path relative to the root.")
    if "\x00" in raw:
        raise _deny("PATH_INVALID", "The path contains a NUL byte.", "Remove the NUL byte.")
    if _WINDOWS_FORM.match(raw):
        raise _deny(
            "PATH_INVALID",
            f"Windows drive and UNC paths are not accepted: {raw!r}.",
            "Use a path relative to the project root.",
        )


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def resolve_inside_root(
    raw: str,
    root: Path,
    *,
    extra_roots: tuple[Path, ...] = (),
    write: bool = False,
    must_exist: bool = False,
) -> ResolvedPath:
    """Resolve ``raw`` under ``root`` (or a granted extra root), refusing every escape."""
    check_syntax(raw)
    lexical = Path(os.path.normpath(os.path.join(root, raw)))
    real = Path(os.path.realpath(lexical))
    inside_lexically = _within(lexical, root)
    if _within(real, root):
        inside = True
    elif any(_within(real, r) for r in extra_roots):
        inside = False
    elif inside_lexically:
        raise _deny(
            "PATH_SYMLINK_ESCAPE",
            f"{raw!r} leads outside the root through a symbolic link.",
            "Work on files inside the project; symlinks out of it are refused.",
        )
    else:
        raise _deny(
            "PATH_OUTSIDE_ROOT",
            f"{raw!r} is outside the project root.",
            "Use a path inside the project, or ask the user to approve access.",
        )
    _check_kind(real, raw, must_exist=must_exist)
    rel = real.relative_to(root).as_posix() if inside and real != root else ("." if inside else "")
    return ResolvedPath(real, rel or str(real), inside)


def _check_kind(real: Path, raw: str, *, must_exist: bool) -> None:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if must_exist:
            raise _deny("PATH_NOT_FOUND", f"{raw!r} does not exist.", "Check the path.") from None
        return
    except OSError as err:
        raise _deny("PATH_INVALID", f"{raw!r} cannot be inspected: {err.strerror}.", "") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise _deny(
            "PATH_SPECIAL",
            f"{raw!r} is a device, socket or pipe; only regular files and folders are allowed.",
            "Use a regular file.",
        )
