"""Where a command reaches outside the project: the programs it runs, its arguments and the
file names it reads from standard input (seed 000 §8.2; the engine asks for each).

A sandbox shows a command the folder of its program, so a program given as a path is judged
by where it really lives, every symlink resolved, and so is its folder. Inside the project,
in a system tree (``/usr``, ``/opt``...), in a ``PATH`` entry or in xclaw's own Python is
fine; a toolchain on ``PATH`` in the home folder counts by its top folder there
(``~/.pyenv/shims`` → ``~/.pyenv``), which is what the sandbox shows of it. Anywhere else —
the home folder, another project, ``/tmp`` — asks. A program named without a ``/`` is looked
up on ``PATH`` and is fine, as are the programs launchers (``env``, ``nice``, ``xargs``,
``find -exec``...) run by name.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xclaw.core.errors import PolicyDenied
from xclaw.core.tooling import Command
from xclaw.policy.launchers import Layer, launch_chain
from xclaw.policy.paths import find_outside_paths, os_refusal

Role = Literal["program", "argument", "standard input"]

_SYSTEM_PROGRAM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
_SHARED_HOME_DIRS = frozenset({".local", ".config", ".cache"})  # only the PATH entry counts
# Programs that take file names from standard input, and options making others do so.
_READ_NAMES = frozenset({"xargs", "cpio"})
_NAMES_FROM_VALUE = frozenset({"--files-from", "--files0-from", "--pathspec-from-file", "-T"})
_NAMES_FLAGS = frozenset({"--stdin-paths", "-@", "-T-"})  # git hash-object, zip, tar
_QUOTES = str.maketrans("", "", "'\"\\")


@dataclass(frozen=True, slots=True)
class OutsidePath:
    word: str  # as the command wrote it
    path: Path  # where it leads, symlinks resolved
    role: Role


def command_outside_paths(
    command: Command, root: Path, cwd: Path, *, extra_roots: Sequence[Path] = ()
) -> list[OutsidePath]:
    """Every program, argument and standard-input file name of ``command`` that leads
    outside the root and the grants. ``cwd`` is the resolved working directory.

    Raises PolicyDenied (PATH_INVALID or PATH_CHANGED) when a path cannot be resolved.
    """
    real_root = _real(root)
    fine = [real_root, *(_real(r) for r in extra_roots), *program_locations(real_root)]
    chain = launch_chain(command.program, command.argv)
    found: list[OutsidePath] = []
    judged: set[int] = set()  # argv positions judged as programs, not again as arguments
    for layer in chain:
        if "/" not in layer.word or "\x00" in layer.word:  # the tool refuses NUL bytes itself
            continue
        if layer.at is not None:
            judged.add(layer.at)
        where = _outside_program(layer.word, cwd, fine)
        if where is not None:
            found.append(OutsidePath(layer.word, where, "program"))
    args = [a for i, a in enumerate(command.argv) if i not in judged]
    for arg, path in find_outside_paths(args, root, cwd=cwd, extra_roots=extra_roots):
        found.append(OutsidePath(arg, path, "argument"))
    if command.stdin and reads_names_from_stdin(chain):
        names = _stdin_words(command.stdin)
        for name, path in find_outside_paths(names, root, cwd=cwd, extra_roots=extra_roots):
            found.append(OutsidePath(name, path, "standard input"))
    return found


def describe(found: Sequence[OutsidePath]) -> str:
    """One clause per role: ``runs a program from outside the project: /x/run.py; ...``."""
    lead = {
        "program": "runs a program from outside the project",
        "argument": "arguments reach outside the project",
        "standard input": "standard input names files outside the project",
    }
    clauses = []
    for role, text in lead.items():
        words = [_shown(o) for o in found if o.role == role]
        if words:
            clauses.append(f"{text}: " + ", ".join(dict.fromkeys(words)))
    return "; ".join(clauses)


def _shown(o: OutsidePath) -> str:
    return o.word if o.role == "argument" or o.word == str(o.path) else f"{o.word} → {o.path}"


def runs_from_program_location(program: str, cwd: Path, root: Path) -> bool:
    """Whether ``program`` is looked up on PATH or lives in a system or toolchain folder
    (not merely in the project, where the model may have written it)."""
    if "/" not in program:
        return True
    if "\x00" in program:
        return False
    try:
        return _outside_program(program, cwd, program_locations(_real(root))) is None
    except PolicyDenied:  # a path changed while it was looked at: not known to be safe
        return False


def _outside_program(word: str, cwd: Path, fine: Sequence[Path]) -> Path | None:
    """Where ``word`` or its folder really is, when that is nowhere in ``fine``."""
    joined = os.path.join(cwd, word)  # an absolute word stays absolute
    for path in (_real(joined), _real(os.path.dirname(joined))):
        if not any(path.is_relative_to(f) for f in fine):
            return path
    return None


def program_locations(root: Path) -> list[Path]:
    """System trees, ``PATH`` entries (home toolchains by their top folder) and xclaw's own
    Python, symlinks resolved; never ``/``, a home folder or a folder above the project."""
    homes = _homes()
    found = [Path(os.path.realpath(t)) for t in _SYSTEM_PROGRAM_TREES if os.path.isdir(t)]
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    candidates = [_toolchain(Path(os.path.realpath(e)), homes) for e in entries if os.path.isabs(e)]
    candidates += [Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix)]
    for path in candidates:
        wide = len(path.parts) <= 2 or path in root.parents
        if not wide and not any(path == h or path in h.parents for h in homes):
            found.append(path)
    return list(dict.fromkeys(found))


def _toolchain(entry: Path, homes: Sequence[Path]) -> Path:
    for home in homes:
        if home in entry.parents:
            top = home / entry.relative_to(home).parts[0]
            if top.name.startswith(".") and top.name not in _SHARED_HOME_DIRS:
                return top
    return entry


def _homes() -> list[Path]:
    """$HOME and the account's own home, where toolchains on PATH live even when HOME moved."""
    homes = [os.environ.get("HOME", "")]
    try:
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        pass
    return [Path(os.path.realpath(h)) for h in dict.fromkeys(homes) if os.path.isabs(h)]


def reads_names_from_stdin(chain: Sequence[Layer]) -> bool:
    """Whether a program of the command takes file names from standard input (xargs, cpio,
    ``tar -T -``, ``rsync --files-from=-``, ``git add --pathspec-from-file=-``, ``zip -@``)."""
    for layer in chain:
        if layer.name in _READ_NAMES or (layer.name == "git" and "--stdin" in layer.args):
            return True
        for i, a in enumerate(layer.args):
            name, eq, value = a.partition("=")
            nxt = layer.args[i + 1] if i + 1 < len(layer.args) else ""
            if a in _NAMES_FLAGS or (name in _NAMES_FROM_VALUE and (value if eq else nxt) == "-"):
                return True
    return False


def _stdin_words(text: str) -> list[str]:
    """Each line, each word, and both without quotes: xargs splits on blanks and honours
    quotes, ``xargs -d '\\n'`` and ``tar -T`` take whole lines, ``-0`` NUL-ended names."""
    words: dict[str, None] = {}
    for line in re.split(r"[\n\x00]", text):
        for form in (line, line.translate(_QUOTES)):
            for word in (form.strip(), *form.split()):
                if word:
                    words[word] = None
    return list(words)


def _real(path: str | Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except OSError as err:
        raise os_refusal(err, str(path)) from None
