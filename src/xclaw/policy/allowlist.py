"""Host mode's allow-list: the read-only command forms that run without asking.

Without a sandbox nothing contains a program, so — as in Codex's untrusted mode — only forms
known to read and print run unasked; every other command asks (or runs because the user
allowed that program for the task). Paths in the arguments are still judged by the engine
(outside the root, protected files, hard links).
"""

from __future__ import annotations

from collections.abc import Sequence

from xclaw.policy.launchers import normalize_program

# Programs that only read their inputs and print, whatever options they get.
_READERS = frozenset(
    "ls cat head tail wc stat file pwd echo printf true false basename dirname realpath "
    "readlink which whoami id date uname du df tree diff cmp md5sum sha1sum sha256sum "
    "sha512sum cut tr nl od grep egrep fgrep jq test [ printenv column fold expand".split()
)
# Options that make an otherwise read-only program write files or run commands.
_WRITING_OPTIONS = {
    "sort": ("-o", "--output", "--compress-program"),
    "uniq": (),
    "rg": ("--pre", "--pre-glob", "-z", "--search-zip"),
    "find": (
        "-exec",
        "-execdir",
        "-ok",
        "-okdir",
        "-delete",
        "-fprint",
        "-fprint0",
        "-fls",
        "-fprintf",
    ),
}
_GIT_READ = frozenset(
    {
        "status",
        "diff",
        "log",
        "show",
        "rev-parse",
        "ls-files",
        "blame",
        "describe",
        "shortlog",
        "branch",
        "tag",
        "remote",
    }
)
_GIT_UNSAFE = (
    "--output",
    "--ext-diff",
    "--textconv",
    "--upload-pack",
    "--exec",
    "-c",
    "--config-env",
    "--open-files-in-pager",
    "-O",
)
_VERSION_ONLY = (["--version"], ["-V"], ["-v"], ["version"])


def known_safe(program: str, argv: Sequence[str]) -> bool:
    """True for a command form that only reads and prints (see the module docstring)."""
    name = normalize_program(program)
    args = list(argv)
    if name in _READERS:
        return True
    if name in _WRITING_OPTIONS:
        bad = _WRITING_OPTIONS[name]
        if name == "uniq":
            return len([a for a in args if not a.startswith("-")]) <= 1
        return not any(
            a == b or a.startswith(b + "=") or (len(b) == 2 and a.startswith(b))
            for a in args
            for b in bad
        )
    if name == "git":
        return _git_read_only(args)
    return args in _VERSION_ONLY


def _git_read_only(args: list[str]) -> bool:
    while args and args[0] in ("--no-pager", "--no-optional-locks"):
        args = args[1:]
    if not args or args[0] not in _GIT_READ:
        return False
    sub, rest = args[0], args[1:]
    if any(a == u or a.startswith(u + "=") for a in rest for u in _GIT_UNSAFE):
        return False
    if sub in ("branch", "tag"):  # listing only
        return all(a.startswith("-") and a not in ("-d", "-D", "-m", "-M", "-f") for a in rest)
    if sub == "remote":
        return rest in ([], ["-v"], ["--verbose"])
    return True
