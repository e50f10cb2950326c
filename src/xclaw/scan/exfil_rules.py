"""Secrets leaving the machine, as shell, JavaScript or any text shows it: the whole environment
or a key file sent by curl, wget, nc, fetch and friends, and data carried in DNS names.

Line rules with a small per-file memory: a variable or a temporary file filled from ``env`` or
``~/.ssh/id_rsa`` is followed to a later line that sends it (``E=$(env|base64)`` … ``curl -d
"$E"``). Python files get the same flows from the ``ast`` in ``python_network``; here they only
get the shell commands their strings hold.

The boundary: one named variable sent where the skill's code sends it (``-H "Authorization:
Bearer $API_TOKEN"``) is configuration; the whole environment, a key file, a ``.env`` file or
cookies sent anywhere is exfiltration.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from xclaw.scan.context import FileContext
from xclaw.scan.mentions import fenced_lines, is_prose_mention
from xclaw.scan.report import Severity
from xclaw.scan.text_rules import CREDENTIALS

ENVIRONMENT, CREDENTIAL = "environment", "credential"

_CMD = r"(?:^|(?<=[\s|;&(`{'\"]))"  # where a command starts, also inside a string
_DUMPS = r"(?:env|printenv|export\s+-p|declare\s+-p?x|typeset\s+-x|compgen\s+-e)"
_DUMP_FILES = (
    r"|/proc/(?:self|thread-self|\$\$|\$PPID|\d+|\*)/environ\b"
    r"|(?i:\b(?:Get-ChildItem|gci|dir|ls)\s+env:)(?![\w\\])"
    r"|(?i:\[(?:System\.)?Environment\]::GetEnvironmentVariables\(\s*\))"
    r"|(?<=['\"`])(?:env|printenv)(?=['\"`]\s*\))"  # execSync('env'), os.popen("printenv")
)
# Commands and expressions that yield every variable at once: in shell (and documents) ...
ENV_DUMP_SHELL = re.compile(rf"{_CMD}{_DUMPS}(?=\s*(?:[|)`;&>]|$))|{_CMD}set(?=\s*\|){_DUMP_FILES}")
# ... and inside the strings and substitutions of code, where a bare `env &&` is a variable.
ENV_DUMP_IN_STRINGS = re.compile(
    rf"(?:(?<=['\"`])|(?<=\$\())\s*{_DUMPS}(?=\s*(?:[|`;&>]|\)\s*[|`;&>'\"]|$)){_DUMP_FILES}"
)
ENV_DUMP_CODE = re.compile(
    r"\bos\.environb?\b(?!\s*(?:\[|\.get\b|\.setdefault\b|\.pop\b|\.__getitem__\b))"
    r"|(?<!typeof )\bprocess\.env\b(?!\s*(?:\.|\[|\?|===?|!==?|&&|\|\|))"  # not a test
    r"|%ENV\b|\bENV\.(?:to_h|to_a|inspect)\b|\bSystem\.getenv\(\s*\)"
)
# Programs and APIs that send bytes to another host.
SHELL_SENDER = re.compile(
    r"(?<![\w.-])(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|sftp|tftp|ftp|sendmail|mailx"
    r"|swaks)(?![\w-])"
    r"|\brsync\b[^\n]{0,300}?\s[\w.@-]{1,100}:|\bopenssl\s+s_client\b|/dev/(?:tcp|udp)/"
    r"|(?i:Invoke-WebRequest|Invoke-RestMethod|(?<![\w-])(?:iwr|irm)(?![\w-])|Net\.WebClient"
    r"|\bUpload(?:String|Data|File)\b)"
    r"|\bhttp\s+(?:POST|PUT|PATCH|--form|-f)\b"
)
CODE_SENDER = re.compile(
    r"\bfetch\s*\(|\baxios\b|\bhttps?\.(?:request|get|post)\s*\(|\bXMLHttpRequest\b"
    r"|\bsendBeacon\b|\bnet\.(?:connect|createConnection|Socket)\b|\bnew\s+WebSocket\b"
    r"|\.post\s*\(|\brequests\.\w+\s*\(|\bhttpx\.\w+\s*\(|\burlopen\s*\(|\bhttp\.client\b"
    r"|\bsocket\.\w+\s*\(|\bNet::HTTP\b|\bLWP::|\bHTTP::Tiny\b|\bIO::Socket\b|\bTCPSocket\b"
)
# A whole .env file read, uploaded or encoded (not `source .env`, which only sets variables).
DOTENV_WHOLE = re.compile(
    r"(?:@|<\s*|\b(?:cat|base64|xxd|od|gzip|less|head|tail)\s+(?:-\S+\s+)*"
    r"|(?:-[a-zA-Z]*T|--upload-file)\s+|readFileSync\(\s*|readFile\(\s*|open\(\s*)"
    r"[\"'`]?(?:\./)?\.env(?![\w.-]|\.(?:example|sample|template))"
)
_COOKIE = re.compile(r"\bdocument\.cookie\b")
# Right before a use of the environment: it becomes a child process's environment.
_CHILD_ENV = re.compile(
    r"[{(,]\s*env\s*[:=]\s*(?:\{\s*\.\.\.|\{\s*\*\*|dict\(|Object\.assign\(\s*\{\s*\}\s*,)?\s*$"
)
_AS_IDENTITY = re.compile(
    r"(?:\s-i\s*|IdentityFile[=\s]\s*|(?:ssh-add|mkdir|chmod|chown|cd|ls|touch)\s+(?:-\S+\s+)*)"
    r"[\"']?(?:~|\$HOME|\$\{HOME\})?/?$"
)
# A whole folder of keys (`tar c ~/.ssh | curl -T -`, `scp -r ~/.aws host:`).
KEY_DIRS = re.compile(
    r"(?<![\w.])(?:\.ssh|\.aws|\.gnupg|\.kube|\.docker|\.config/gcloud)/?(?=[\s\"'`)|;]|$)"
)
_DNS_HINT = re.compile(r"dig|nslookup|host|drill|delv|ping|getent|resolvectl|dns")
_COMMENT = {
    "shell": ("#", "REM ", "::"),
    "python": ("#",),
    "js": ("//", "/*", "* "),
    "other-code": ("#", "//", "/*", "* "),
}

_SHELL_ASSIGN = re.compile(
    r"(?:^|;|&&|\|\|)\s*(?:(?:export|local|readonly|declare(?:\s+-\w+)?)\s+)?"
    r"([A-Za-z_]\w*)=(?!=)"
)
_POWERSHELL_ASSIGN = re.compile(r"(?:^|;)\s*\$([A-Za-z_]\w*)\s*=(?![=>~])")
_CODE_ASSIGN = re.compile(
    r"(?:^|;)\s*(?:(?:const|let|var|my|our|local)\s+)?[$@%]?([A-Za-z_][\w]*)\s*=(?![=>~])"
)
_COPY = re.compile(
    r"\s*(?:(?:JSON\.stringify|Buffer\.from|btoa|encodeURIComponent|String|Object\.\w+"
    r"|new\s+URLSearchParams)\s*\(\s*(?:\{\s*)?)?(?:\.\.\.)?([A-Za-z_$][\w$]*)"
    r"\s*[)}]*\s*(?:[;,]|$)"  # the name is the whole value, not part of an expression
)
_REDIRECT = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?([^\s;|&)'\"`]+)")

_DNS_TOOL = re.compile(
    r"(?<![\w.-])(?:dig|nslookup|host|drill|kdig|delv|ping6?|resolvectl\s+query"
    r"|getent\s+a?hosts)\s"
)
_SUBST_LABEL = re.compile(
    r"(?:\$\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|`[^`]+`)[\"']?\.[A-Za-z0-9-]"
)
_VAR_LABEL = re.compile(r"\$\{?([A-Za-z_]\w*)\}?\.[A-Za-z0-9-]")
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|cred|auth|cookie|session|private", re.I)
_JS_DNS = re.compile(r"\bdns(?:\.promises)?\.(?:lookup|resolve\w*)\s*\(")
_JS_SECRET = re.compile(r"\bprocess\.env\b|toString\(\s*['\"](?:hex|base64)['\"]")
_JS_LABEL = re.compile(r"\+\s*['\"`]\.[A-Za-z0-9-]|\}\.[A-Za-z0-9-]")
_WINDOW = 12  # lines a multi-line call (fetch(url, {...})) may span
_MAX_COMMANDS, _MAX_SEGMENT = 8, 1_000  # DNS commands looked at per line, characters each


_MAX_REMEMBERED = 16  # a script fills a few; a bundle that fills more is not followed further
# Literal words one of which a line must hold before the patterns run (a cheap first pass).
_CRED_HINTS = re.compile(
    r"\.ssh|\.aws|credential|netrc|npmrc|pypirc|shadow|passwd|keychain|login|cookie|local state"
    r"|key4|wallet|secret-tool|security|gcloud|\.kube|\.docker|\.env"
)
_DUMP_HINTS = re.compile(r"env|declare|typeset|export|compgen")


@dataclass
class _Memory:
    """What this file has put in variables and temporary files so far: name -> kinds."""

    kind: str
    variables: dict[str, set[str]] = field(default_factory=dict)
    files: dict[str, set[str]] = field(default_factory=dict)
    _pattern: re.Pattern[str] | None = None

    def __bool__(self) -> bool:
        return bool(self.variables or self.files)

    def learn(self, table: dict[str, set[str]], name: str, kinds: set[str]) -> None:
        if name in table or len(self.variables) + len(self.files) < _MAX_REMEMBERED:
            table.setdefault(name, set()).update(kinds)
            self._pattern = None

    def referenced(self, text: str) -> set[str]:
        """What the variables and files named in ``text`` hold; in code ``env.TOKEN`` reads one
        value out of a variable and is not a use of the whole."""
        if not self:
            return set()
        kinds: set[str] = set()
        for m in self._compiled().finditer(text):
            if m.group("f"):
                kinds |= self.files[m.group("f")]
            elif not _as_child_env(text, m):
                kinds |= self.variables[m.group("s") or m.group("c")]
        return kinds

    def _compiled(self) -> re.Pattern[str]:
        if self._pattern is None:
            names = "|".join(map(re.escape, self.variables)) or "(?!)"
            paths = "|".join(map(re.escape, self.files)) or "(?!)"
            shell = rf"\$\{{?(?P<s>{names})\b" if self.kind in {"shell", "doc"} else "(?P<s>(?!))"
            code = (
                rf"(?<![\w.$])(?P<c>{names})\b(?!\s*(?:\.|\[|\?\.|=[^=]|:(?!:)))"
                if self.kind != "shell"
                else "(?P<c>(?!))"
            )
            self._pattern = re.compile(rf"{shell}|{code}|(?<![\w/.-])(?P<f>{paths})(?![\w/-])")
        return self._pattern


def _as_child_env(text: str, m: re.Match[str]) -> bool:
    """``{ env }`` or ``env: vars``: a variable given as a child process's environment."""
    before, after = text[max(0, m.start() - 60) : m.start()], text[m.end() :]
    shorthand = (
        m.group() == "env" and re.search(r"[{,]\s*$", before) and re.match(r"\s*[,}]", after)
    )
    return bool(shorthand or _CHILD_ENV.search(before))


@dataclass
class _Scan:
    ctx: FileContext
    fenced: frozenset[int]
    python: bool  # a parsed Python file: only the shell commands in its strings count here
    memory: _Memory

    def dump(self, text: str) -> re.Match[str] | None:
        if self.ctx.kind in {"shell", "doc", "data", "other"}:
            return ENV_DUMP_SHELL.search(text) or _code_dump(text)  # also `python -c "..."`
        return ENV_DUMP_IN_STRINGS.search(text) or (None if self.python else _code_dump(text))

    def sender(self, text: str) -> re.Match[str] | None:
        return SHELL_SENDER.search(text) or (None if self.python else CODE_SENDER.search(text))

    def sources(self, line: str) -> tuple[bool, bool]:
        """(the whole environment, a credential) read on this line; substring tests first."""
        low = line.lower()
        dump = _DUMP_HINTS.search(low) or ("set" in low and "|" in line)
        cred = _CRED_HINTS.search(low)
        return bool(dump and self.dump(line)), bool(cred and credential_read(line))

    def emit(self, rule: str, n: int, line: str, start: int, message: str) -> None:
        mention = is_prose_mention(self.ctx, self.fenced, n, line, start)
        self.ctx.emit(
            rule,
            n,
            start + 1,
            severity=Severity.MEDIUM if mention else None,
            message=message.removesuffix(".") + " (named in prose, not asked for)."
            if mention
            else message,
        )


def scan_exfil(ctx: FileContext) -> None:
    """Apply the exfiltration rules to every line of ``ctx``."""
    python = ctx.kind == "python" and ctx.parsed
    scan = _Scan(ctx, fenced_lines(ctx), python, _Memory(ctx.kind))
    # Most files read no secret at all (a literal pass over the whole text says so), and then
    # only DNS names built from command output remain to look for.
    low = ctx.text.lower()
    any_source = bool(_DUMP_HINTS.search(low) and scan.dump(ctx.text)) or bool(
        _CRED_HINTS.search(low)
    )
    for n, line in enumerate(ctx.lines, start=1):
        line = line[:20_000]  # a minified megaline: its head only, rules stay linear
        if line.lstrip().startswith(_COMMENT.get(ctx.kind, ())):
            continue  # a comment that describes an attack is not one
        if any_source:
            _follow(scan, n, line)
        if _DNS_HINT.search(line):
            _dns(scan, n, line)


def _follow(scan: _Scan, n: int, line: str) -> None:
    dump, cred = scan.sources(line)
    held = scan.memory.referenced(line)
    if dump or cred or held:
        _remember(scan, line, dump, cred, held)
    elif line.count("(") <= line.count(")") and not line.rstrip().endswith("\\"):
        return  # nothing read here, and no call or command left open for the next line
    sender = scan.sender(line)
    if sender:
        _sent(scan, n, line, sender, _statement(scan.ctx.lines, n, line))


def _code_dump(text: str) -> re.Match[str] | None:
    """``process.env`` or ``os.environ`` used whole, unless it is the environment handed to a
    child process (``{ env: { ...process.env, X: 1 } }``), which goes nowhere."""
    for m in ENV_DUMP_CODE.finditer(text):
        if not _CHILD_ENV.search(text[max(0, m.start() - 60) : m.start()]):
            return m
    return None


def credential_read(text: str) -> re.Match[str] | None:
    """A key file, credential store or key folder, .env file or cookie jar read in ``text`` (a
    key given to ``ssh -i`` or ``ssh-add`` only proves who you are, and ``mkdir ~/.ssh`` reads
    nothing, so neither is counted)."""
    for pattern in (CREDENTIALS, KEY_DIRS):
        for m in pattern.finditer(text):
            if not _AS_IDENTITY.search(text[max(0, m.start() - 40) : m.start()]):
                return m
    return DOTENV_WHOLE.search(text) or _COOKIE.search(text)


def _remember(scan: _Scan, line: str, dump: bool, cred: bool, held: set[str]) -> None:
    read: set[str] = set()
    if dump:
        read.add(ENVIRONMENT)
    if cred:
        read.add(CREDENTIAL)
    kind = scan.ctx.kind
    patterns = {
        "shell": [_SHELL_ASSIGN, _POWERSHELL_ASSIGN],
        "doc": [_SHELL_ASSIGN, _POWERSHELL_ASSIGN, _CODE_ASSIGN],
        "python": [],  # Python's own variables are followed by the ast rules
    }
    for pattern in patterns.get(kind, [_CODE_ASSIGN]):
        for m in pattern.finditer(line):
            kinds = read | (held if kind in {"shell", "doc"} else _copied(scan, line[m.end() :]))
            if kinds:
                scan.memory.learn(scan.memory.variables, m.group(1), kinds)
    if kind not in {"shell", "doc", "python"} or not (read or held):
        return  # ">" is a redirection only in shell (and in the commands Python strings hold)
    for m in _REDIRECT.finditer(line):
        target = m.group(1)
        if not target.startswith(("&", "/dev/null", "/dev/std")):
            scan.memory.learn(scan.memory.files, target, read | held)


def _copied(scan: _Scan, value: str) -> set[str]:
    """In code, a variable takes what another holds only when it is that one, whole or
    serialised (``b = JSON.stringify(env)``), not whenever a line mentions it: a bundle that
    reads ``process.env`` once would otherwise taint half its names."""
    m = _COPY.match(value)
    if m is None or m.group(1) not in scan.memory.variables:
        return set()
    return scan.memory.variables[m.group(1)]


def _statement(lines: list[str], n: int, first: str) -> str:
    """The sending line and, while its parentheses stay open or it ends in ``\\``, the next."""
    parts, depth = [first], first.count("(") - first.count(")")
    for nxt in lines[n : n + _WINDOW]:
        if depth <= 0 and not parts[-1].rstrip().endswith("\\"):
            break
        parts.append(nxt[:2_000])
        depth += nxt.count("(") - nxt.count(")")
    return "\n".join(parts)


def _sent(scan: _Scan, n: int, line: str, sender: re.Match[str], statement: str) -> None:
    dump = scan.dump(statement)
    remembered = scan.memory.referenced(statement)
    if dump or ENVIRONMENT in remembered:
        at = dump.start() if dump and dump.start() < len(line) else sender.start()
        scan.emit(
            "exfil.environment",
            n,
            line,
            at,
            f"The whole environment is sent out ({_name(sender)}).",
        )
    cred = credential_read(statement)
    if cred or CREDENTIAL in remembered:
        at = cred.start() if cred and cred.start() < len(line) else sender.start()
        scan.emit(
            "credentials.exfiltrate",
            n,
            line,
            at,
            f"A key file, .env file or cookie jar is sent out ({_name(sender)}).",
        )


def _name(sender: re.Match[str]) -> str:
    return sender.group().strip(" (").split()[0]


def _dns(scan: _Scan, n: int, line: str) -> None:
    js = _JS_DNS.search(line)
    if js:
        statement = _statement(scan.ctx.lines, n, line)
        secret = _JS_SECRET.search(statement) or scan.memory.referenced(statement)
        if secret and _JS_LABEL.search(statement):
            scan.emit("exfil.dns", n, line, js.start(), "A secret is looked up as a DNS name.")
        return
    for tool in itertools.islice(_DNS_TOOL.finditer(line), _MAX_COMMANDS):
        segment = _command_segment(line, tool.end())
        hit = _SUBST_LABEL.search(segment)
        if hit is None:
            hit = next(
                (
                    m
                    for m in _VAR_LABEL.finditer(segment)
                    if _SECRET_NAME.search(m.group(1)) or m.group(1) in scan.memory.variables
                ),
                None,
            )
        if hit:
            scan.emit(
                "exfil.dns",
                n,
                line,
                tool.start(),
                f"{tool.group().strip()} looks up a name carrying data ({hit.group()[:40]}…).",
            )
            return


def _command_segment(line: str, start: int) -> str:
    """From ``start`` to the end of that command: the first ``;``, ``&&``, ``||`` or ``|``
    outside ``$(...)`` and backticks."""
    depth, tick, i = 0, False, start
    end = min(len(line), start + _MAX_SEGMENT)
    while i < end:
        ch = line[i]
        if ch == "`":
            tick = not tick
        elif line.startswith("$(", i):
            depth += 1
            i += 1
        elif ch == ")" and depth:
            depth -= 1
        elif ch in ";|&" and not depth and not tick:
            break
        i += 1
    return line[start:i]
