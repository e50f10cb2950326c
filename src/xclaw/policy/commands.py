"""Command policy (seed 000 §8.2): which ``program + argv`` forms need a human's approval.

The program's basename is normalised (``/usr/bin/rm``, ``RM.EXE`` → ``rm``) and wrappers such
as ``env``, ``nice``, ``timeout``, ``xargs`` or ``find -exec`` are unwrapped, so a dangerous
program cannot hide behind a path or a launcher; what ``find`` and ``xargs`` run once per file
asks as a bulk action, and a known form inside ``sh -c`` code asks as it would on its own.
This recognises *known* high-risk forms only: any program can still spawn processes or
generate code in ways no argv check can see, so it is policy, not a sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xclaw.core.tooling import Risk
from xclaw.policy._argv import Options, before_dashdash, long_is, scan, short_flags, split_string
from xclaw.policy._shell import plain_script, simple_commands
from xclaw.policy.allowlist import known_safe
from xclaw.policy.launchers import (
    CODE_VARIABLES,
    MAX_DEPTH,
    SHELL_STRING_LAUNCHERS,
    WRAPPERS,
    after_options,
    env_parts,
    find_exec_blocks,
    has_c,
    normalize_program,
    unwrap,
)
from xclaw.policy.paths import find_outside_paths


@dataclass(frozen=True, slots=True)
class CommandVerdict:
    action: Literal["allow", "ask"]
    risk: Risk
    reason: str
    rule: str  # what an "allow for task" grant names, e.g. "git push", "rm", "bash -c"
    runs_code: bool = False  # what it risks is code it runs, which a sandbox contains


ALLOW_EXECUTE = CommandVerdict("allow", Risk.EXECUTE, "", "")
Check = Callable[[str, Sequence[str]], CommandVerdict | None]


def _ask(risk: Risk, reason: str, rule: str) -> CommandVerdict:
    return CommandVerdict("ask", risk, reason, rule)


def _code(reason: str, rule: str) -> CommandVerdict:
    """The command would run code of the model's choosing: contained by a sandbox."""
    return CommandVerdict("ask", Risk.DESTRUCTIVE, reason, rule, runs_code=True)


def _inline(rule: str) -> CommandVerdict:
    return _code(f"inline code ({rule})", rule)


# --- interpreters given inline code ----------------------------------------------------


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


# An interpreter with no script reads its code from standard input (terminal.exec can feed
# it), so "no script" asks like inline code does; -s and -i make shells read it too.
_SHELL = Options(
    value_short="oO", value_long=_w("--rcfile --init-file"), inline_short="csi", plus_prefix=True
)
_INTERPRETERS: dict[str, tuple[Options, str]] = {
    "fish": (Options(inline_short="cCi", inline_long=_w("--command --init-command")), "-c"),
    "python": (
        Options(
            value_short="WX",
            value_long=_w("--check-hash-based-pycs"),
            inline_short="ci",
            stop_short="m",
            info=_w("-V -VV -h --help --version"),
        ),
        "-c",
    ),
    "node": (
        Options(
            value_short="rC",
            value_long=_w("--require --import --loader --experimental-loader --input-type")
            | _w("--conditions --title --env-file --inspect-port --watch-path"),
            inline_short="epi",
            inline_long=_w("--eval --print --interactive"),
            info=_w("-v -h --help --version"),
        ),
        "-e",
    ),
    "bun": (
        Options(
            value_short="rc",
            value_long=_w("--cwd --config --preload --env-file --port"),
            inline_short="ep",
            inline_long=_w("--eval --print"),
            info=_w("-v -h --help --version --revision"),
        ),
        "-e",
    ),
    "perl": (
        Options(
            value_short="I",
            glued_short="MmixdDFCV",
            digits_short="l0",
            inline_short="eE",
            info=_w("-v -V -h --help --version"),
        ),
        "-e",
    ),
    "ruby": (
        Options(value_short="CEIr", glued_short="FKxi", digits_short="0TW", inline_short="e"),
        "-e",
    ),
    "php": (Options(value_short="cdfztS", inline_short="rRBEa", info=_w("-v -i -m -h")), "-r"),
}
for _sh in ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "csh", "tcsh"):
    _INTERPRETERS[_sh] = (_SHELL, "-c")

_PYTHON_NAME = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[a-z]?$|^py$")


def _family(name: str) -> str:
    if _PYTHON_NAME.match(name):
        return "python"
    if name.startswith("mkfs"):
        return "mkfs"
    return {"nodejs": "node", "powershell": "pwsh", "flyctl": "fly", "tofu": "terraform"}.get(
        name, name
    )


def _check_interpreter(family: str, args: Sequence[str]) -> CommandVerdict | None:
    spec, flag = _INTERPRETERS[family]
    inline, i = scan(args, spec)
    if inline:
        return _inline(f"{family} {flag}")
    if (i >= len(args) or args[i] == "-") and not any(a in spec.info for a in args):
        return _code(f"code from standard input ({family})", f"{family} {flag}")
    return None


def _check_deno(family: str, args: Sequence[str]) -> CommandVerdict | None:
    words = before_dashdash(args)
    positional = [a for a in words if not a.startswith("-")]
    evals = any(a in ("-e", "--eval") or a.startswith("--eval=") for a in words)
    stdin = positional[:1] in ([], ["repl"], ["eval"]) or "-" in words
    info = any(a in ("-v", "-V", "--version", "-h", "--help") for a in words)
    return _inline("deno eval") if evals or (stdin and not info) else None


def _check_pwsh(family: str, args: Sequence[str]) -> CommandVerdict | None:
    # PowerShell accepts any unambiguous prefix of a parameter, with - or / (but /x/y is a path).
    params = [a for a in args if a[:1] == "-" or (a[:1] == "/" and "/" not in a[1:])]
    names = [a.lstrip("-/").lower() for a in params]
    if any("command".startswith(n) or "encodedcommand".startswith(n) or n == "ec" for n in names):
        return _inline("pwsh -c")
    if any("file".startswith(n) or "version".startswith(n) for n in names):
        return None
    # A bare first argument that is no script runs as a command (Windows PowerShell); none at
    # all means commands come from standard input.
    loose = [a for a in args if a not in params]
    return None if loose[:1] and loose[0].lower().endswith(".ps1") else _inline("pwsh -c")


def _always(risk: Risk, what: str) -> Check:
    """A program that asks whatever its arguments (sudo, dd, ssh, cmd)."""
    return lambda family, args: _ask(risk, f"{family} {what}", family)


# --- git -------------------------------------------------------------------------------

_GIT_VALUE_OPTS = _w("-C -c --git-dir --work-tree --namespace --super-prefix --config-env")
# Config keys whose value git runs as a command, or that pull in other config.
_GIT_EXEC_KEY = re.compile(
    r"^(?:alias\.|pager\.|filter\.|credential\.|gpg\.|include|sequence\.editor$"
    r"|diff\.external$|core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)$"
    r"|.*\.(?:textconv|command|cmd|program|helper|receivepack|uploadpack)$)",
    re.IGNORECASE,
)


def _git_globals(args: Sequence[str]) -> tuple[list[str], int]:
    """(config values given with -c/--config-env, index of the subcommand)."""
    configs: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        name, eq, value = a.partition("=")
        if a in _GIT_VALUE_OPTS:
            if i + 1 < len(args) and a in ("-c", "--config-env"):
                configs.append(args[i + 1])
            i += 2
            continue
        if eq and name == "--config-env":
            configs.append(value)
        elif a.startswith("-c") and len(a) > 2:
            configs.append(a[2:])
        i += 1
    return configs, i


def _check_git(family: str, args: Sequence[str]) -> CommandVerdict | None:
    configs, i = _git_globals(args)
    sub = args[i] if i < len(args) else ""
    rest = list(args[i + 1 :])
    # "git config alias.x '!cmd'" stores what "git -c" would pass once: both ask.
    keys = configs + (rest if sub == "config" else [])
    if any(_GIT_EXEC_KEY.match(k.split("=", 1)[0]) for k in keys):
        return _code("git config that runs commands", "git -c")
    if sub in ("push", "send-email"):
        return _ask(Risk.EXTERNAL, f"git {sub} sends commits to another machine", f"git {sub}")
    if sub == "clean" and not any(a in ("-n", "--dry-run") for a in rest):
        return _ask(Risk.DESTRUCTIVE, "git clean deletes untracked files", "git clean")
    if sub == "reset" and "--hard" in rest:
        return _ask(Risk.DESTRUCTIVE, "git reset --hard discards uncommitted work", "git reset")
    if sub == "submodule" and "foreach" in rest:
        return _inline("git submodule foreach")
    if sub == "rebase" and any(a in ("-x", "--exec") or a.startswith("--exec=") for a in rest):
        return _inline("git rebase --exec")
    return None


# --- publishing and deploying ----------------------------------------------------------

# program: subcommand sequences that publish or deploy, "|" between alternatives; "*" is any
# invocation except local work (vercel alone deploys).
_PUBLISH_TABLE = """
npm: publish | unpublish
yarn: publish | npm publish
pnpm: publish
twine: upload
cargo: publish
gem: push
poetry: publish
uv: publish
flit: publish
hatch: publish
pdm: publish
docker: push | image push | manifest push
podman: push | image push | manifest push
gh: release create | release upload | pr create | pr merge | repo create | repo delete
netlify: deploy
fly: deploy
firebase: deploy
wrangler: deploy | publish
kubectl: apply | delete | create | replace | patch | scale
terraform: apply | destroy
helm: install | upgrade | uninstall
vercel: *
"""
_PUBLISH: dict[str, tuple[tuple[str, ...], ...]] = {
    # Longest first, so "yarn npm publish" is named as such rather than "yarn publish".
    prog.strip(): tuple(sorted((tuple(alt.split()) for alt in alts.split("|")), key=len)[::-1])
    for prog, alts in (line.split(":") for line in _PUBLISH_TABLE.strip().splitlines())
}


def _contains(words: list[str], seq: tuple[str, ...]) -> bool:
    n = len(seq)
    return any(tuple(words[k : k + n]) == seq for k in range(len(words) - n + 1))


def _check_publish(family: str, args: Sequence[str]) -> CommandVerdict | None:
    # A subcommand anywhere among the words: an option value may sit before it.
    words = [a for a in before_dashdash(args) if not a.startswith("-")]
    for seq in _PUBLISH[family]:
        if seq == ("*",) and words[:1] not in (["dev"], ["build"], ["help"]):
            return _ask(Risk.EXTERNAL, f"{family} deploys outside this machine", family)
        if _contains(words, seq):
            rule = " ".join((family, *seq))
            return _ask(Risk.EXTERNAL, f"{rule} publishes or deploys outside this machine", rule)
    return None


# --- uploads ---------------------------------------------------------------------------

_WRITE_METHODS = _w("POST PUT DELETE PATCH")
_CURL_UPLOAD_LONG = _w("--upload-file --form --form-string --json")
_CURL_VALUE_SHORT = "AbcCDeEHKmortuUwxYyz"


def _check_curl(family: str, args: Sequence[str]) -> CommandVerdict | None:
    upload = _ask(Risk.SENSITIVE, "curl sends data to a remote host", "curl")
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            if name in _CURL_UPLOAD_LONG or name.startswith("--data"):
                return upload
            if name == "--request" and (value if eq else nxt).upper() in _WRITE_METHODS:
                return upload
            continue
        body = short_flags(a)
        for j, ch in enumerate(body):
            if ch in "TdF":
                return upload
            if ch == "X" and (body[j + 1 :] or nxt).upper() in _WRITE_METHODS:
                return upload
            if ch == "X" or ch in _CURL_VALUE_SHORT:
                break
    return None


def _check_wget(family: str, args: Sequence[str]) -> CommandVerdict | None:
    upload = _ask(Risk.SENSITIVE, "wget sends data to a remote host", "wget")
    for i, a in enumerate(args):
        name, eq, value = a.partition("=")
        if name in ("--post-data", "--post-file", "--body-data", "--body-file"):
            return upload
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if name == "--method" and (value if eq else nxt).upper() in _WRITE_METHODS:
            return upload
    return None


# --- deleting, privileges, disks ---------------------------------------------------------


def _check_rm(family: str, args: Sequence[str]) -> CommandVerdict:
    for a in before_dashdash(args):
        forced = a.startswith("--") and any(
            long_is(a, full) for full in ("--recursive", "--force", "--no-preserve-root")
        )
        if forced or set(short_flags(a)) & set("rRf"):
            return _ask(Risk.DESTRUCTIVE, "recursive or forced delete", "rm")
    return CommandVerdict("allow", Risk.WRITE, "", "rm")


def _check_recursive_mode(family: str, args: Sequence[str]) -> CommandVerdict | None:
    for a in before_dashdash(args):
        if "R" in short_flags(a) or (a.startswith("--") and long_is(a, "--recursive")):
            return _ask(Risk.DESTRUCTIVE, f"recursive {family}", f"{family} -R")
    return None


def _check_find(args: Sequence[str], depth: int) -> CommandVerdict | None:
    asks = [
        v
        for _, words in find_exec_blocks(args)
        if (v := _classify(words[0], words[1:], depth + 1, many=True)).action == "ask"
    ]
    if "-delete" in args:
        asks.insert(0, _ask(Risk.DESTRUCTIVE, "find -delete removes every match", "find -delete"))
    if len({v.rule for v in asks}) > 1:  # one rule's grant must not let the others run
        risk = max((v.risk for v in asks), key=_RISKS.index)
        reason = "; ".join(dict.fromkeys(v.reason for v in asks))
        return CommandVerdict("ask", risk, reason, "find -exec", all(v.runs_code for v in asks))
    return asks[0] if asks else None


_RISKS = list(Risk)
_DELETERS = frozenset({"rm", "unlink"})


def _per_input(family: str, verdict: CommandVerdict) -> CommandVerdict:
    """What a program run once per file (find -exec, xargs) risks: all the files it is given.

    Deleting them is the recursive delete ``rm -rf`` asks for, and code run for each can
    destroy each, which no sandbox contains inside the project: both ask in every mode.
    """
    if verdict.action == "ask" and verdict.runs_code:
        reason = f"{verdict.reason}, run for every file (find -exec, xargs)"
        return CommandVerdict("ask", Risk.DESTRUCTIVE, reason, verdict.rule)
    if verdict.action == "allow" and family in _DELETERS:
        reason = f"{family} run for every file (find -exec, xargs) deletes them all"
        return _ask(Risk.DESTRUCTIVE, reason, family)
    return verdict


def _inside_shell_code(args: Sequence[str], verdict: CommandVerdict, depth: int) -> CommandVerdict:
    """A shell's inline code (``sh -c STRING``) asks like the destructive or outgoing command
    it visibly holds; granting that command alone does not let the rest of the code run.
    Code that hides nothing and runs only read-only programs asks as the command it is (its
    risk is running it, not destroying), and names the files it redirects into (``echo hi >
    notes.txt``): the same rule and grant, a plain label."""
    inline, i = scan(args, _SHELL)
    if not inline or "c" not in short_flags(args[i]):
        return verdict
    script = next((a for a in args[i + 1 :] if a[:1] not in ("-", "+")), None)
    for words in simple_commands(script or "") or []:
        inner = _classify(words[0], words[1:], depth + 1)
        if inner.action == "ask" and not inner.runs_code:
            reason = f"{inner.reason}, in inline code"
            return CommandVerdict("ask", inner.risk, reason, verdict.rule)
    plain = plain_script(script or "")
    if plain is None or not plain[0] or not all(known_safe(w[0], w[1:]) for w in plain[0]):
        return verdict
    writes = plain[1]
    if writes:
        reason = f"writes {', '.join(writes)}, in {verdict.reason}"
    else:
        reason = f"{verdict.reason} running read-only commands only"
    return CommandVerdict("ask", Risk.EXECUTE, reason, verdict.rule, runs_code=True)


_PRIV = Risk.DESTRUCTIVE
_DISK = "can overwrite disks or files for good"
_CHECKS: dict[str, Check] = {
    **{name: _check_interpreter for name in _INTERPRETERS},
    **{name: _check_publish for name in _PUBLISH},
    **dict.fromkeys(_w("sudo su doas pkexec runas gsudo"), _always(_PRIV, "runs as another user")),
    **dict.fromkeys(_w("dd mkfs shred wipefs fdisk sfdisk parted"), _always(_PRIV, _DISK)),
    **{name: _check_recursive_mode for name in ("chmod", "chown", "chgrp")},
    **dict.fromkeys(_w("ssh scp sftp"), _always(Risk.EXTERNAL, "reaches a remote host")),
    "deno": _check_deno,
    "pwsh": _check_pwsh,
    "cmd": _always(Risk.DESTRUCTIVE, "runs inline code (cmd /c or standard input)"),
    "git": _check_git,
    "curl": _check_curl,
    "wget": _check_wget,
    "rm": _check_rm,
}


def _unwrap_env(args: Sequence[str], depth: int, many: bool) -> CommandVerdict:
    options_end, i = env_parts(args)
    split = split_string(args[:options_end])
    if split is not None:  # env -S "prog args": the string is a command line of its own
        return _classify("env", [*split, *args[options_end:]], depth + 1, many)
    for word in args[options_end:i]:
        name = word.split("=", 1)[0]
        if name in CODE_VARIABLES or name.startswith("GIT_CONFIG"):
            return _code(f"{name} makes the program run other code", f"env {name}")
    if i >= len(args):
        return _no_program("env", many)
    return _classify(args[i], list(args[i + 1 :]), depth + 1, many)


def _no_program(name: str, many: bool) -> CommandVerdict:
    """A launcher given no program: run by xargs or find, the program comes from the input."""
    return _code(f"{name} runs programs named by its input", name) if many else ALLOW_EXECUTE


# --- entry points ------------------------------------------------------------------------


def classify_command(program: str, argv: Sequence[str]) -> CommandVerdict:
    """Allow, or ask with a risk and the narrow rule an "allow for task" answer would grant.

    ``argv`` holds the arguments after the program, as in ``Command``.
    """
    return _classify(program, list(argv), 0)


def _classify(program: str, args: list[str], depth: int, many: bool = False) -> CommandVerdict:
    """``many``: run once per input by find -exec or xargs (see ``_per_input``)."""
    name = normalize_program(program)
    if depth > MAX_DEPTH:
        return _code("too many nested launcher programs", name)
    verdict = _launched(name, args, depth, many)
    if verdict is None:
        family = _family(name)
        check = _CHECKS.get(family)
        verdict = (check(family, args) if check is not None else None) or ALLOW_EXECUTE
        if verdict.runs_code and _INTERPRETERS.get(family, (None,))[0] is _SHELL:
            verdict = _inside_shell_code(args, verdict, depth)
        name = family
    return _per_input(name, verdict) if many else verdict


def _launched(name: str, args: list[str], depth: int, many: bool) -> CommandVerdict | None:
    """The verdict for a launcher (by what it runs), or None when ``name`` is none."""
    if name == "env":
        return _unwrap_env(args, depth, many)
    if name == "find":
        return _check_find(args, depth) or ALLOW_EXECUTE
    if name in ("watch",) or (name in ("script", "flock") and has_c(args)):
        return _inline(SHELL_STRING_LAUNCHERS.get(name, f"{name} -c"))
    if name in ("npm", "pnpm", "yarn") and args[:1] in (["x"], ["exec"], ["dlx"]):
        inner = after_options(args[1:])
        return _classify(inner[0], inner[1:], depth + 1, many) if inner else ALLOW_EXECUTE
    wrapper = WRAPPERS.get(name)
    if wrapper is None:
        return None
    if name in ("npx", "pnpx") and any(a in ("-c", "--call") for a in args):
        return _inline(f"{name} -c")
    inner = unwrap(wrapper, args)
    if not inner:
        return _no_program(name, many)
    return _classify(inner[0], inner[1:], depth + 1, many or name == "xargs")


def arguments_reaching_outside(
    argv: Sequence[str],
    root: Path,
    *,
    cwd: Path | None = None,
    extra_roots: Sequence[Path] = (),
) -> list[str]:
    """Arguments that look like paths resolving outside the root (the engine asks for them)."""
    return [arg for arg, _ in find_outside_paths(argv, root, cwd=cwd, extra_roots=extra_roots)]
