"""Launchers: programs that run another program (``env``, ``nice``, ``timeout``, ``xargs``,
``npx``, ``taskset``, ``strace``, ``find -exec``...), and how to find the program they run.

Shared by the deny-list (``policy.commands``), the checks for what a sandbox cannot contain
(``policy.reach``) and for where programs run from (``policy.command_paths``), so all three
see through the same launchers.
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
    start = _wrapped_at(spec, args)
    return [] if start is None else list(args[start:])


def _wrapped_at(spec: _Wrapper, args: Sequence[str]) -> int | None:
    """Index of the wrapped program in ``args``; None when no program follows."""
    for a in before_dashdash(args):
        if not a.startswith("-"):
            break
        if set(short_flags(a)) & set(spec.no_command):
            return None
    _, i = scan(args, spec.options)
    i += spec.skip_positionals
    return i if i < len(args) else None


# Variables whose value some program runs as code or loads into every process.
CODE_VARIABLES = frozenset(
    {"LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "ENV", "PROMPT_COMMAND"}
    | {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"}
    | {"GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "PAGER", "EDITOR", "VISUAL"}
)
ENV_OPTIONS = Options(value_short="uCSP", value_long=_w("--unset --chdir --split-string"))


def after_options(args: Sequence[str]) -> list[str]:
    """The program and its arguments after a launcher's own options (``npm x -y -- prog``)."""
    start = _after_options_at(args)
    return [] if start is None else list(args[start:])


def _after_options_at(args: Sequence[str]) -> int | None:
    for i, a in enumerate(args):
        if a == "--":
            return i + 1 if i + 1 < len(args) else None
        if not a.startswith("-"):
            return i
    return None


def has_c(args: Sequence[str]) -> bool:
    return any(a in ("-c", "--command") or a.startswith("--command=") for a in args)


# find's actions that run a program, up to ";" or "+".
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Launchers that run their program once per input: its arguments are many files.
PER_INPUT = frozenset({"xargs", "find"})


@dataclass(frozen=True, slots=True)
class Layer:
    """One program of a command: the outer one, or one a launcher runs."""

    word: str  # the program as the command wrote it
    args: list[str]
    at: int | None = None  # index of ``word`` in the outer argv; None: outer, or from env -S
    many: bool = False  # run once per input (xargs, find -exec), so on many files

    @property
    def name(self) -> str:
        return normalize_program(self.word)


def env_parts(args: Sequence[str]) -> tuple[int, int]:
    """(end of ``env``'s options, index of the program it runs: after ``NAME=value`` words)."""
    _, i = scan(args, ENV_OPTIONS)
    while i < len(args) and args[i] == "-":  # "env -" is "env -i", options may follow
        _, more = scan(args[i + 1 :], ENV_OPTIONS)
        i += 1 + more
    j = i
    while j < len(args) and "=" in args[j] and not args[j].startswith("="):
        j += 1
    return i, j


def find_exec_blocks(args: Sequence[str]) -> list[tuple[int, list[str]]]:
    """(index, words) of each program ``find`` runs with -exec, -execdir, -ok or -okdir."""
    blocks: list[tuple[int, list[str]]] = []
    for i, a in enumerate(args):
        if a in FIND_EXEC:
            inner: list[str] = []
            for b in args[i + 1 :]:
                if b in (";", "+"):
                    break
                inner.append(b)
            if inner:
                blocks.append((i + 1, inner))
    return blocks


def _inner(name: str, args: list[str]) -> tuple[int | None, list[str]]:
    """(index in ``args`` of the program a launcher runs, or None for words of env -S;
    that program's words). No words: not a launcher, or it runs nothing."""
    if name == "env":
        options_end, i = env_parts(args)
        split = split_string(args[:options_end])
        if split is not None:  # env -S "prog args": a command line of its own, env's again
            return None, ["env", *split, *args[options_end:]]
        return i, args[i:]
    if name in ("npm", "pnpm", "yarn") and args[:1] in (["x"], ["exec"], ["dlx"]):
        start = _after_options_at(args[1:])
        return (None, []) if start is None else (start + 1, args[start + 1 :])
    if name == "find":
        blocks = find_exec_blocks(args)
        return blocks[0] if blocks else (None, [])
    spec = WRAPPERS.get(name)
    start = _wrapped_at(spec, args) if spec is not None else None
    return (None, []) if start is None else (start, args[start:])


def launch_chain(program: str, argv: Sequence[str]) -> list[Layer]:
    """The program and every program it launches through ``env``, ``nice``, ``timeout``,
    ``xargs``, ``npx``, ``find -exec`` and the other known launchers, outermost first."""
    layers = [Layer(program, list(argv))]
    offset: int | None = 0  # where the current layer's args start in the outer argv
    for _ in range(MAX_DEPTH):
        outer = layers[-1]
        start, words = _inner(outer.name, outer.args)
        if not words:
            break
        at = None if offset is None or start is None else offset + start
        many = outer.many or outer.name in PER_INPUT
        layers.append(Layer(words[0], list(words[1:]), at, many))
        offset = None if at is None else at + 1
    return layers


def unwrapped(program: str, argv: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(normalised name, arguments) of each layer of ``launch_chain``."""
    return [(layer.name, layer.args) for layer in launch_chain(program, argv)]
