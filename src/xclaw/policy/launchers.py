"""Launchers: programs that run another program (``env``, ``nice``, ``timeout``, ``xargs``,
``npx``, ``taskset``, ``strace``...), and how to find the program they run.

Shared by the deny-list (``policy.commands``) and the checks for what a sandbox cannot contain
(``policy.reach``), so both see through the same launchers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from xclaw.policy._argv import Options, before_dashdash, scan, short_flags, split_string

MAX_DEPTH = 8


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


def normalize_program(program: str) -> str:
    """``/usr/bin/rm`` → ``rm``; ``C:\\Tools\\Git.EXE`` → ``git``."""
    name = re.split(r"[\\/]", program.strip())[-1].lower()
    for ext in (".exe", ".cmd", ".bat", ".com"):
        if name.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


@dataclass(frozen=True, slots=True)
class _Wrapper:
    options: Options = field(default_factory=Options)
    skip_positionals: int = 0  # timeout's duration
    no_command: str = ""  # letters meaning "no program follows" (command -v, ionice -p)


WRAPPERS: dict[str, _Wrapper] = {
    # "nice -5 cmd" needs nothing special: digits are no option letters.
    "nice": _Wrapper(Options(value_short="n", value_long=_w("--adjustment"))),
    "timeout": _Wrapper(
        Options(value_short="sk", value_long=_w("--signal --kill-after")),
        skip_positionals=1,
    ),
    "nohup": _Wrapper(),
    "setsid": _Wrapper(),
    "busybox": _Wrapper(),
    "xargs": _Wrapper(
        Options(
            value_short="nLIdsPaE",
            glued_short="ile",
            value_long=_w("--arg-file --delimiter --max-args --max-procs --max-chars")
            | _w("--process-slot-var"),
        )
    ),
    "command": _Wrapper(no_command="vV"),
    "exec": _Wrapper(Options(value_short="a")),
    "time": _Wrapper(Options(value_short="fo", value_long=_w("--format --output"))),
    "stdbuf": _Wrapper(Options(value_short="ioe", value_long=_w("--input --output --error"))),
    "ionice": _Wrapper(
        Options(value_short="cnpPu", value_long=_w("--class --classdata")),
        no_command="pPu",
    ),
    "npx": _Wrapper(Options(value_short="p", value_long=_w("--package"))),
    "pnpx": _Wrapper(Options(value_short="p", value_long=_w("--package"))),
    "bunx": _Wrapper(),
    "uvx": _Wrapper(Options(value_long=_w("--from --with --python"))),
    # Launchers that change how a program runs, then run it.
    "taskset": _Wrapper(Options(value_short=""), skip_positionals=1, no_command="p"),
    "chrt": _Wrapper(Options(value_short="T P D"), skip_positionals=1, no_command="pm"),
    "prlimit": _Wrapper(Options(value_short="p"), no_command="p"),
    "setpriv": _Wrapper(
        Options(value_long=_w("--reuid --regid --groups --inh-caps --ambient-caps --bounding-set"))
    ),
    "unshare": _Wrapper(Options(value_short="S G R w", value_long=_w("--setuid --setgid"))),
    "strace": _Wrapper(Options(value_short="eoOpPsSuEXIa"), no_command="p"),
    "ltrace": _Wrapper(Options(value_short="eoOpPsSuEXIaAnlL"), no_command="p"),
    "firejail": _Wrapper(),
    "systemd-run": _Wrapper(Options(value_short="pEu", value_long=_w("--unit --property"))),
    "flock": _Wrapper(
        Options(value_short="wE", value_long=_w("--timeout --conflict-exit-code")),
        skip_positionals=1,
    ),
    "catchsegv": _Wrapper(),
    "valgrind": _Wrapper(),
    "rlwrap": _Wrapper(),
    "faketime": _Wrapper(skip_positionals=1),
    "torsocks": _Wrapper(),
    "proxychains": _Wrapper(),
    "proxychains4": _Wrapper(),
    "sg": _Wrapper(skip_positionals=1),
}
# Launchers whose command is a shell string: always inline code.
SHELL_STRING_LAUNCHERS = {"watch": "watch", "script": "script -c", "su": "su -c"}


def unwrap(spec: _Wrapper, args: Sequence[str]) -> list[str]:
    """The wrapped program and its arguments; empty when none follows."""
    for a in before_dashdash(args):
        if not a.startswith("-"):
            break
        if set(short_flags(a)) & set(spec.no_command):
            return []
    _, i = scan(args, spec.options)
    return list(args[i + spec.skip_positionals :])


# Variables whose value some program runs as code or loads into every process.
CODE_VARIABLES = frozenset(
    {"LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PROMPT_COMMAND"}
    | {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"}
    | {"GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "PAGER", "EDITOR", "VISUAL"}
)
ENV_OPTIONS = Options(value_short="uCSP", value_long=_w("--unset --chdir --split-string"))


def after_options(args: Sequence[str]) -> list[str]:
    """The program and its arguments after a launcher's own options (``npm x -y -- prog``)."""
    for i, a in enumerate(args):
        if a == "--":
            return list(args[i + 1 :])
        if not a.startswith("-"):
            return list(args[i:])
    return []


def has_c(args: Sequence[str]) -> bool:
    return any(a in ("-c", "--command") or a.startswith("--command=") for a in args)


def unwrapped(program: str, argv: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(normalised name, arguments) of the program and of every program it launches through
    ``env``, ``nice``, ``timeout``, ``xargs``, ``npx`` and the other known launchers."""
    layers: list[tuple[str, list[str]]] = []
    name, args = normalize_program(program), list(argv)
    for _ in range(MAX_DEPTH):
        layers.append((name, args))
        if name == "env":
            _, i = scan(args, ENV_OPTIONS)
            while i < len(args) and "=" in args[i]:
                i += 1
            split = split_string(args[:i])
            inner = [*split, *args[i:]] if split is not None else args[i:]
        elif name in ("npm", "pnpm", "yarn") and args[:1] in (["x"], ["exec"], ["dlx"]):
            inner = after_options(args[1:])
        elif name in WRAPPERS:
            inner = unwrap(WRAPPERS[name], args)
        else:
            break
        if not inner:
            break
        name, args = normalize_program(inner[0]), list(inner[1:])
    return layers
