"""The one way xclaw runs git on the host, and the identity the agent's commits carry.

A repository xclaw reads may come from anywhere, and git runs programs named in its
configuration: hooks, ``core.fsmonitor``, filter drivers (``filter.<name>.clean``), textconv
and external diff commands, pagers, editors, askpass and credential helpers. Every host git
therefore gets:

- an environment without the user's system or global configuration (``GIT_CONFIG_NOSYSTEM``,
  ``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_ATTR_NOSYSTEM``) and without any inherited ``GIT_*``
  variable (``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_COUNT``, ``GIT_DIR``...);
- ``--no-pager`` and fixed ``-c`` settings (``SAFE_OPTIONS``) for what would run a program or
  change the output xclaw parses (prefixes, colours, quoting);
- for the repository's own configuration (``.git/config`` and what it includes), an empty
  value for every program-running key it defines, found by listing it first
  (``config_listing``); these go through ``GIT_CONFIG_KEY_<n>``, which takes any driver name;
- ``--no-ext-diff --no-textconv`` after every diff-like subcommand.

The only settings kept from the user's own files are their trust decisions
(``safe.directory``) and, for ``git_identity``, ``user.name`` and ``user.email``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Final

__all__ = [
    "FALLBACK_EMAIL",
    "FALLBACK_NAME",
    "SAFE_ENV",
    "SAFE_OPTIONS",
    "GitInvocation",
    "clean_environ",
    "config_listing",
    "forget_cached_settings",
    "git_identity",
    "invocation",
    "neutralizers",
    "run_git",
    "sanitize_identity",
]

SAFE_ENV: Final[Mapping[str, str]] = MappingProxyType(
    {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",  # a status peek never takes index.lock from the user's git
        "GIT_ASKPASS": "",  # empty (not unset): core.askPass and SSH_ASKPASS are not tried
        "GIT_EDITOR": ":",  # git never starts ":" as an editor
        "GIT_SEQUENCE_EDITOR": ":",
        "GIT_SSH_COMMAND": "ssh",  # wins over core.sshCommand
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_NO_LAZY_FETCH": "1",  # a partial clone never fetches behind our back
        "LC_ALL": "C",
    }
)

# Top-level options, before the subcommand. Values git would run are emptied (an empty
# diff.external fails the diff rather than run anything; --no-ext-diff avoids it anyway);
# the rest pin git's defaults where a repository could change what xclaw parses.
SAFE_OPTIONS: Final[tuple[str, ...]] = (
    "--no-pager",
    *(
        arg
        for setting in (
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            "core.pager=cat",
            "core.attributesFile=/dev/null",
            "core.quotePath=true",
            "diff.external=",
            "diff.noprefix=false",
            "diff.mnemonicPrefix=false",
            "diff.relative=false",
            "diff.srcPrefix=a/",
            "diff.dstPrefix=b/",
            "color.ui=never",
            "color.diff=never",
            "color.status=never",
            "color.branch=never",
            "credential.helper=",  # empty: the helper list starts over, with nothing in it
            "commit.gpgSign=false",
            "tag.gpgSign=false",
            "log.showSignature=false",
            "status.showUntrackedFiles=normal",
            "submodule.recurse=false",
            "gc.auto=0",  # no background gc or maintenance in the user's repository
            "maintenance.auto=false",
            "protocol.ext.allow=never",  # ext:: URLs are commands
        )
        for arg in ("-c", setting)
    ),
)

# Per-name keys of a repository's configuration that name a program, and what each name gets.
_PROGRAM_KEYS: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", "")),
    "merge": (("driver", ""),),
    "credential": (("helper", ""),),
}
# Subcommands that may run a diff driver, and the flags that keep them from it.
_DIFF_LIKE: Final[Mapping[str, tuple[str, ...]]] = {
    name: ("--no-ext-diff", "--no-textconv")
    for name in ("diff", "log", "show", "diff-files", "diff-index", "diff-tree", "whatchanged")
} | {"blame": ("--no-textconv",)}
# Top-level options that take a separate value (``-c key=value``, ``-C dir``).
_VALUED_OPTIONS: Final = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace"})
_LISTING: Final = ("config", "--list", "-z", "--includes")


@dataclass(frozen=True, slots=True)
class GitInvocation:
    """What to start for one git: ``argv`` goes after the executable, ``env`` over a base
    without ``GIT_*`` variables (``clean_environ``, or a sandbox's allow-list)."""

    argv: tuple[str, ...]
    env: dict[str, str]


def config_listing() -> GitInvocation:
    """The safe ``git config --list`` whose output ``invocation`` needs: run it in the same
    directory, with the same base environment, as the command itself."""
    return invocation(_LISTING)


def invocation(args: Sequence[str], listing: bytes | str = b"") -> GitInvocation:
    """``git <args>`` made safe; ``listing`` is the output of ``config_listing`` in the
    repository (empty outside one: nothing to neutralise)."""
    trusted = tuple(arg for d in _safe_directories() for arg in ("-c", f"safe.directory={d}"))
    env = dict(SAFE_ENV)
    overrides = neutralizers(listing)
    if overrides:
        env["GIT_CONFIG_COUNT"] = str(len(overrides))
        for i, (key, value) in enumerate(overrides):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    return GitInvocation((*SAFE_OPTIONS, *trusted, *_with_diff_guards(args)), env)


def neutralizers(listing: bytes | str) -> list[tuple[str, str]]:
    """``(key, value)`` overrides for every program-running key in ``listing`` (the ``-z``
    output of ``git config --list``): ``filter.<name>.clean`` and its siblings, textconv,
    diff and merge drivers, per-URL credential helpers."""
    text = listing.decode("utf-8", "surrogateescape") if isinstance(listing, bytes) else listing
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for record in text.split("\0"):
        key = record.partition("\n")[0]
        section, _, rest = key.partition(".")
        sub, _, _var = rest.rpartition(".")
        keys = _PROGRAM_KEYS.get(section.lower())
        if keys is None or not sub or (section, sub) in seen:
            continue
        seen.add((section, sub))
        out.extend((f"{section}.{sub}.{var}", value) for var, value in keys)
    return out


def _with_diff_guards(args: Sequence[str]) -> tuple[str, ...]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _VALUED_OPTIONS else 1
    if i >= len(args):
        return tuple(args)
    guards = _DIFF_LIKE.get(args[i], ())
    return (*args[: i + 1], *guards, *args[i + 1 :])


def clean_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) without ``GIT_*`` or askpass variables, plus
    ``SAFE_ENV``: for git started directly rather than through a sandbox launcher."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.upper().startswith(("GIT_", "SSH_ASKPASS"))}
    env.update(SAFE_ENV)
    return env


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    executable: str = "git",
    stdin: bytes | None = None,
    timeout: float = 60.0,
    base_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` the safe way (its configuration listed first), blocking;
    output is captured. ``subprocess.TimeoutExpired`` passes through."""
    env = clean_environ(base_env)
    listing = _run(executable, config_listing(), cwd, env, None, timeout)
    call = invocation(args, listing.stdout if listing.returncode == 0 else b"")
    return _run(executable, call, cwd, env, stdin, timeout)


def _run(
    executable: str,
    call: GitInvocation,
    cwd: Path,
    base: dict[str, str],
    stdin: bytes | None,
    timeout: float,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [executable, *call.argv],
        cwd=cwd,
        env={**base, **call.env},
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


# -- the user's own files, for the few settings taken from them ---------------------------------
def _read_user_config(scope: str, pattern: str) -> list[tuple[str, str]]:
    """``(key, value)`` pairs of the user's ``--global`` or ``--system`` file matching
    ``pattern``, read by git (includes followed) from a neutral directory; [] on any failure."""
    env = clean_environ()
    # The user's own choice of file for the scope read (GIT_CONFIG_GLOBAL/_SYSTEM) counts.
    variable = "GIT_CONFIG_GLOBAL" if scope == "--global" else "GIT_CONFIG_SYSTEM"
    env.pop(variable, None)
    env.pop("GIT_CONFIG_NOSYSTEM")
    if os.environ.get(variable):
        env[variable] = os.environ[variable]
    argv = ["git", "--no-pager", "config", scope, "--includes", "-z", "--get-regexp", pattern]
    try:
        done = subprocess.run(
            argv,
            cwd=tempfile.gettempdir(),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10.0,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    text = done.stdout.decode("utf-8", "replace")
    return [(key, value) for key, _, value in (r.partition("\n") for r in text.split("\0")) if key]


@cache
def _safe_directories() -> tuple[str, ...]:
    """The user's ``safe.directory`` entries (system and global): which repositories owned by
    someone else they chose to trust. Read once per process."""
    found: list[str] = []
    for scope in ("--system", "--global"):
        for _key, value in _read_user_config(scope, r"^safe\.directory$"):
            if value == "":
                found.clear()  # an empty entry resets the list, as in git
            elif value not in found:
                found.append(value)
    return tuple(found)


# -- identity -----------------------------------------------------------------------------------
FALLBACK_NAME: Final = "xclaw agent"
FALLBACK_EMAIL: Final = "xclaw@localhost"
_MAX_IDENTITY = 100
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Zl", "Zp"})


def sanitize_identity(value: str, *, email: bool = False) -> str:
    """One trimmed line of at most 100 characters without control or format characters
    (newlines, zero-width, bidi) or ``<>``; no whitespace at all in an email."""
    kept = "".join(
        " " if unicodedata.category(c) in _DROPPED_CATEGORIES or c.isspace() else c
        for c in value
        if c not in "<>"
    )
    text = "".join(kept.split()) if email else " ".join(kept.split())
    return text[:_MAX_IDENTITY].strip()


@cache
def _identity() -> tuple[str, str, str, str]:
    configured = dict(_read_user_config("--global", r"^user\.(name|email)$"))
    name = os.environ.get("GIT_AUTHOR_NAME") or configured.get("user.name", "")
    mail = (
        os.environ.get("GIT_AUTHOR_EMAIL")
        or configured.get("user.email", "")
        or os.environ.get("EMAIL", "")
    )
    author_name = sanitize_identity(name) or FALLBACK_NAME
    author_email = sanitize_identity(mail, email=True) or FALLBACK_EMAIL
    committer_name = sanitize_identity(os.environ.get("GIT_COMMITTER_NAME", "")) or author_name
    committer_email = (
        sanitize_identity(os.environ.get("GIT_COMMITTER_EMAIL", ""), email=True) or author_email
    )
    return author_name, author_email, committer_name, committer_email


def git_identity() -> dict[str, str]:
    """``GIT_AUTHOR_NAME``/``_EMAIL`` and ``GIT_COMMITTER_NAME``/``_EMAIL`` for the agent's
    commits: the user's own (those variables if set, else ``user.name``/``user.email`` of
    their global git configuration), sanitized; "xclaw agent" <xclaw@localhost> when there is
    none. Read once per process; a new dict each call."""
    author_name, author_email, committer_name, committer_email = _identity()
    return {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": committer_name,
        "GIT_COMMITTER_EMAIL": committer_email,
    }


def forget_cached_settings() -> None:
    """Read the identity and ``safe.directory`` again on next use (tests, a changed HOME)."""
    _identity.cache_clear()
    _safe_directories.cache_clear()
