"""Just enough argv parsing to see where a program's leading options end.

Used by the command policy to find inline code (``python -c``), the program a wrapper such as
``timeout`` or ``xargs`` runs, and the words of ``env -S``. Option tables are data per
program; this module knows only the common getopt conventions.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass


def long_is(arg: str, full: str) -> bool:
    """``--rec`` and ``--recursive=x`` both mean ``--recursive`` (getopt accepts prefixes)."""
    name = arg.split("=", 1)[0]
    return len(name) >= 3 and full.startswith(name)


def short_flags(arg: str) -> str:
    """The letters of a short-option cluster (``-rf`` → ``rf``), or "" for anything else."""
    return arg[1:] if len(arg) > 1 and arg[0] == "-" and arg[1] != "-" else ""


def before_dashdash(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    for a in args:
        if a == "--":
            break
        out.append(a)
    return out


@dataclass(frozen=True, slots=True)
class Options:
    """How a program parses its leading options, enough to find where they end."""

    value_short: str = ""  # letters taking a value, glued or in the next argument
    glued_short: str = ""  # letters whose value can only be glued (perl -Mstrict)
    digits_short: str = ""  # letters taking optional glued digits, then more flags (perl -l0n)
    value_long: frozenset[str] = frozenset()  # long options taking the next argument
    inline_short: str = ""  # letters introducing inline code (python -c)
    inline_long: frozenset[str] = frozenset()  # python has none; node --eval
    stop_short: str = ""  # letters ending option parsing (python -m module)
    plus_prefix: bool = False  # shells accept "+o" and "+e" as options too
    info: frozenset[str] = frozenset({"--version", "--help"})  # print and exit, run no code


def scan(args: Sequence[str], spec: Options) -> tuple[bool, int]:
    """(inline code seen, index of the first argument after the options)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return False, i + 1
        if len(a) < 2 or a[0] not in ("-+" if spec.plus_prefix else "-"):
            return False, i
        if a.startswith("--"):
            if any(long_is(a, full) for full in spec.inline_long):
                return True, i
            if "=" not in a and any(long_is(a, full) for full in spec.value_long):
                i += 1
        else:
            inline, takes_next, stop = scan_cluster(a[1:], spec)
            if inline:
                return True, i
            if stop:  # python -m: the module is the program, at this position
                return False, i
            i += takes_next
        i += 1
    return False, i


def scan_cluster(body: str, spec: Options) -> tuple[bool, int, bool]:
    """(inline code seen, 1 if the next argument is this cluster's value, options stop)."""
    j = 0
    while j < len(body):
        ch = body[j]
        j += 1
        if ch in spec.digits_short:
            while j < len(body) and body[j].isdigit():
                j += 1
            continue
        if ch in spec.inline_short:
            return True, 0, False
        if ch in spec.stop_short:
            return False, 0, True
        if ch in spec.glued_short:
            return False, 0, False
        if ch in spec.value_short:
            return False, int(j == len(body)), False
    return False, 0, False


def split_string(options: Sequence[str]) -> list[str] | None:
    """The words of an ``env -S STRING`` / ``--split-string=STRING`` option, if any."""
    for k, a in enumerate(options):
        name, eq, value = a.partition("=")
        body = short_flags(a)
        if "S" in body:
            value = body[body.index("S") + 1 :] or (options[k + 1] if k + 1 < len(options) else "")
        elif not (a.startswith("--") and long_is(name, "--split-string")):
            continue
        elif not eq:
            value = options[k + 1] if k + 1 < len(options) else ""
        try:
            return shlex.split(value)
        except ValueError:
            return value.split()
    return None
