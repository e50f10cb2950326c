"""Line rules that hold for any text file: pipe-to-shell, decoded payloads run, obfuscation,
credential stores, prompt injection.

Hand-written regular expressions because these patterns cross languages (shell inside
Markdown, inside JSON, inside a Python string) where no single parser sees them; the Python
parser in ``python_rules`` catches what these miss in ``.py`` files.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xclaw.scan.context import FileContext
from xclaw.scan.report import Severity
from xclaw.scan.rules import RULES

_I = re.IGNORECASE
_SHELLS = r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:/usr/bin/|/bin/)?(?:ba|z|da|k|fi|c|tc)?sh\b"
_INTERP = rf"(?:{_SHELLS}|python[0-9.]*\b|perl\b|ruby\b|node\b|php\b|iex\b|Invoke-Expression\b)"
_FETCH = r"(?:\bcurl\b|\bwget\b|\bfetch\b|\biwr\b|\birm\b|Invoke-WebRequest|Invoke-RestMethod)"

PIPE_TO_SHELL = [
    # curl ... | sh, wget -O- | bash, iwr ... | iex
    re.compile(rf"{_FETCH}[^\n|;]*(?:\|[^\n|;]*)?\|\s*{_INTERP}", _I),
    # bash <(curl ...), source <(wget ...), . <(curl ...)
    re.compile(rf"(?:{_INTERP}|\bsource|(?:^|\s)\.)\s+<\(\s*{_FETCH}", _I),
    # sh -c "$(curl ...)", eval "$(wget ...)", eval `curl ...`
    re.compile(rf"(?:{_SHELLS}\s+-c|\beval)\s+[\"']?(?:\$\(|`)\s*{_FETCH}", _I),
    # iex (New-Object Net.WebClient).DownloadString(...), IEX(iwr ...)
    re.compile(
        r"\b(?:iex|Invoke-Expression)\b[\s(]*(?:\(?\s*New-Object\s+(?:System\.)?Net\."
        r"WebClient\)?\s*\.\s*DownloadString|iwr\b|irm\b|Invoke-WebRequest|"
        r"Invoke-RestMethod)",
        _I,
    ),
    # curl -o x.sh URL && sh x.sh ; wget URL && chmod +x x && ./x
    re.compile(rf"{_FETCH}[^\n;]*https?://[^\n]*(?:&&|;)\s*(?:chmod\s+\+x|{_SHELLS}\s+\S)", _I),
]

_NET_WORDS = r"(?:urllib|urlopen|requests\.get|httpx|http\.client|fetch\(|https?\.get\(|socket)"
DOWNLOAD_EXEC = [
    # python -c "import urllib.request as u; exec(u.urlopen(...).read())"
    re.compile(rf"python[0-9.]*\s+-c\s+.{{0,300}}?{_NET_WORDS}.{{0,300}}?\b(?:exec|eval)\s*\(", _I),
    re.compile(rf"(?<![.\w])(?:exec|eval)\s*\(.{{0,200}}?{_NET_WORDS}", _I),
    # node -e "fetch(u).then(r=>r.text()).then(eval)", eval(await (await fetch(u)).text())
    re.compile(
        r"(?:fetch\(|https?\.get\(|axios).{0,200}?(?:\beval\b|new\s+Function|\bFunction\s*\()"
    ),
    re.compile(
        r"(?:(?<![.\w])eval\s*\(|new\s+Function\s*\(|\bFunction\s*\().{0,200}?(?:fetch\(|https?\.get\()"
    ),
]

_DECODE = (
    r"(?:base64\s+(?:-d|--decode|-D)\b|\bb(?:64|32|16|85)decode|\ba85decode|decodebytes"
    r"|\batob\s*\(|Buffer\.from\([^)]*['\"](?:base64|hex)['\"]|fromhex|unhexlify|xxd\s+-r"
    r"|\brot_?13\b|tr\s+['\"]?A-Za-z['\"]?\s+['\"]?N-ZA-Mn-za-m|zlib\.decompress|gzip\.decompress"
    r"|\binflate(?:Sync|Raw)?\s*\(|String\.fromCharCode|FromBase64String|(?:chr\(\d+\)\s*\+\s*){3})"
)
_RUN = (
    rf"(?:(?<![.\w])eval\s*[(\"'`$]|(?<![.\w])exec\s*\(|\bexecSync\b|\bspawnSync\b|"
    rf"\bchild_process\b|(?-i:new\s+Function|\bFunction\s*\()|\|\s*{_SHELLS}|{_SHELLS}\s+-c|\bos\.system|\bsubprocess\b|\biex\b|"
    rf"Invoke-Expression|\bcompile\s*\()"
)
# Within 200 characters: on a minified megaline, words far apart are not one expression.
DECODED_EXEC = [
    re.compile(rf"{_RUN}.{{0,200}}?{_DECODE}", _I),
    re.compile(rf"{_DECODE}.{{0,200}}?{_RUN}", _I),
]

CHAR_CODES = re.compile(
    r"String\.fromCharCode\s*\(\s*(?:\d+\s*,\s*){7,}|(?:\bchr\(\s*\d+\s*\)\s*\+\s*){5,}", _I
)
_ESCAPE = re.compile(r"\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[0-7]{3}")
_OBF_ID = re.compile(r"\b_0x[0-9a-f]{4,6}\b")
_BLOB = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{200,}={0,2}|(?<![0-9a-fA-F])[0-9a-fA-F]{256,}")

# Credential stores, by path or by the command that reads them.
CREDENTIALS = re.compile(
    r"(?<![\w.])(?:\.ssh[/\\'\", +]+(?:id_(?:rsa|dsa|ecdsa|ed25519)|authorized_keys|\*)"
    r"|\.ssh/?['\"]|\.aws[/\\'\", +]+credentials|\.git-credentials|\.npmrc|\.pypirc|\.netrc"
    r"|\.docker[/\\'\", +]+config\.json|\.kube[/\\'\", +]+config|\.config/gcloud)"
    r"|/etc/shadow|/etc/master\.passwd|[\"'/\\](?-i:Login Data|Local State)\b|cookies\.sqlite"
    r"|key4\.db"
    r"|logins\.json|(?:Chrome|Chromium|Edge|Brave[^/]*)/(?:User\s+Data/)?[^\n'\"]*Cookies"
    r"|login\.keychain|Library/Keychains|\bsecurity\s+(?:find|dump)-(?:generic|internet)-password"
    r"|\bsecurity\s+dump-keychain|\bsecret-tool\s+lookup|\bgit\s+credential\s+fill"
    r"|\.electrum/wallets|wallet\.dat",
    _I,
)
# Cheap substring tests (on the lower-cased line) that gate the expensive patterns.
_FETCH_WORDS = re.compile(r"curl|wget|fetch|iwr|irm|invoke-|downloadstring|webclient")
_EXEC_WORDS = re.compile(r"exec|eval|function")
_DECODE_WORDS = re.compile(
    r"base64|b64|b32|b16|b85|a85|atob|buffer\.from|fromhex|unhexlify|xxd|rot|n-za-m|decompress"
    r"|inflate|fromcharcode|chr\("
)
_CRED_WORDS = re.compile(
    r"\.ssh|\.aws|credential|npmrc|pypirc|netrc|shadow|passwd|login|local state|cookie|key4"
    r"|keychain|security|secret-tool|gcloud|kube|docker|wallet|\.env"
)

DOTENV_READ = re.compile(
    r"(?:\bcat|\bopen\(|readFileSync\(|readFile\(|\bsource|\bless|\bhead|\btail)\s*[\"'(]?"
    r"\s*(?:\./)?\.env\b(?!\.example|\.sample|\.template)",
    _I,
)
_SEND = re.compile(
    r"curl\b[^\n]*(?:-d\b|--data|-F\b|--form|-T\b|--upload-file|-X\s*POST)|\bnc\s+\S+\s+\d+"
    r"|/dev/tcp/|requests\.(?:post|put)|httpx\.(?:post|put)|method:\s*['\"]POST|\.post\(|"
    r"Invoke-WebRequest[^\n]*-Method\s+Post|\bwget\b[^\n]*--post",
    _I,
)
_READ_VERBS = re.compile(
    r"\b(?:cat|read|open|send|upload|copy|include|print|post|attach|base64|paste|collect)\b", _I
)

_INVISIBLE = re.compile("[\u200b-\u200d\u2060-\u2064\ufeff\u00ad\u180e]")
_NEGATED = re.compile(r"\b(?:never|not|don'?t|must\s+not|avoid|refuse)\b|不要|禁止", _I)

_QUOTED = r"[`\"'“”«»「」]"
PROMPT_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?"
    r"(?:the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|system|original|safety)"
    r"\s+(?:instructions?|prompts?|rules|directions|guidelines|messages?)"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:developer|DAN|jailbreak|god)\s*mode"
    r"|\bnew\s+system\s+prompt\s*:|忽略(?:之前|以上|先前|前面)(?:的|所有)?(?:所有)?(?:指令|指示|说明|提示)",
    _I,
)
PROMPT_CONCEAL = re.compile(
    r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?"
    r"to|show|notify|alert|let)\s+(?:this\s+to\s+)?(?:the\s+)?user\b"
    r"|\bwithout\s+(?:telling|informing|notifying|asking|alerting)\s+(?:the\s+)?user"
    r"|\b(?:keep|hide)\s+(?:this|it)\s+(?:secret\s+)?from\s+(?:the\s+)?user"
    r"|\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out)"
    r"|\b(?:silently|secretly|covertly)\s+(?:run|execute|send|upload|post|copy|delete"
    r"|forward|transmit|exfiltrat\w*)|\bquietly\s+(?:send|upload|post|forward|transmit)"
    r"|不要(?:告诉|通知|让)用户|瞒着用户",
    _I,
)
PROMPT_EXFIL = re.compile(
    r"\bexfiltrat\w*|\b(?:send|upload|post|forward)\s+(?:all\s+|the\s+|their\s+|any\s+)?"
    r"(?:user'?s?\s+)?(?:credentials|secrets|tokens|api\s+keys|ssh\s+keys|passwords|cookies"
    r"|environment\s+variables)\s+to\b",
    _I,
)
_EXFIL_TARGET = re.compile(
    r"https?://|\b\w+\.(?:invalid|com|net|org|io|xyz|ru)\b|credential|"
    r"secret|token|ssh|password|api[\s_]key|cookie",
    _I,
)


def scan_text(ctx: FileContext) -> None:
    """Apply every line rule to ``ctx``; at most one finding per rule and line."""
    obf_ids = 0
    for n, line in enumerate(ctx.lines, start=1):
        if len(line) > 20_000:  # a minified megaline: look at its head only, rules stay linear
            line = line[:20_000]
        low = line.lower()
        _shell_and_exec(ctx, n, line, low)
        if len(line) >= 60 or "chr(" in low or "fromcharcode" in low:
            _obfuscation(ctx, n, line)
        if _CRED_WORDS.search(low):
            _credentials(ctx, n, line)
        if ctx.is_doc:
            _prompt(ctx, n, line)
        if "_0x" in line:
            found = len(_OBF_ID.findall(line))
            if found and obf_ids < 5 <= obf_ids + found:
                m = _OBF_ID.search(line)
                ctx.emit("obfuscation.js_identifiers", n, (m.start() if m else 0) + 1)
            obf_ids += found


def _first(patterns: list[re.Pattern[str]], line: str) -> re.Match[str] | None:
    for p in patterns:
        m = p.search(line)
        if m:
            return m
    return None


def _shell_and_exec(ctx: FileContext, n: int, line: str, low: str) -> None:
    m = _first(PIPE_TO_SHELL, line) if _FETCH_WORDS.search(low) else None
    if m:
        quiet = (ctx.kind == "python" and ctx.parsed) or _is_comment(ctx, line)
        ctx.emit(
            "shell.pipe_to_shell",
            n,
            m.start() + 1,
            severity=Severity.MEDIUM if quiet else None,
            message="A pipe-to-shell command sits in a Python string that this file does "
            "not run (a message or a hint)."
            if quiet
            else None,
        )
    if _EXEC_WORDS.search(low):
        m = _first(DOWNLOAD_EXEC, line)
        if m and not (ctx.is_doc and not _looks_like_code(line)):
            ctx.emit("exec.download", n, m.start() + 1)
    if not _DECODE_WORDS.search(low):
        return
    m = _first(DECODED_EXEC, line)
    if m and not (ctx.is_doc and (not _looks_like_code(line) or _NEGATED.search(line))):
        ctx.emit("exec.decoded_payload", n, m.start() + 1)


def _is_comment(ctx: FileContext, line: str) -> bool:
    return ctx.is_code and line.lstrip().startswith(("#", "//", "/*", "* ", "--", "REM ", "::"))


def _looks_like_code(line: str) -> bool:
    # Prose saying "eval the base64 output" is not a payload; a command line or call is.
    return bool(re.search(r"[()|$`;]|\s-[a-zA-Z]\b", line))


def _obfuscation(ctx: FileContext, n: int, line: str) -> None:
    m = CHAR_CODES.search(line)
    if m:
        ctx.emit("obfuscation.char_codes", n, m.start() + 1)
    if len(line) >= 160:
        escapes = _ESCAPE.findall(line)
        if len(escapes) >= 30 and sum(map(len, escapes)) >= 0.5 * len(line.strip()):
            first = _ESCAPE.search(line)
            ctx.emit(
                "obfuscation.escaped_strings",
                n,
                (first.start() if first else 0) + 1,
                message=f"A {len(line)}-character line is mostly escaped characters "
                f"({len(escapes)} escapes).",
            )
    if len(line) >= 200:
        b = _BLOB.search(line)
        if b and "data:image/" not in line[max(0, b.start() - 40) : b.start()]:
            ctx.emit("obfuscation.encoded_blob", n, b.start() + 1)


def _credentials(ctx: FileContext, n: int, line: str) -> None:
    m = CREDENTIALS.search(line)
    dotenv = DOTENV_READ.search(line)
    # `source .env && curl -d ... -H "Bearer $KEY"` sets variables; it sends no file.
    sent = m or (dotenv if dotenv and not dotenv.group().lower().startswith("source") else None)
    if sent and _SEND.search(line):
        ctx.emit("credentials.exfiltrate", n, sent.start() + 1)
        return
    if m:
        negated = _NEGATED.search(line[: m.start()])
        strong = (ctx.is_code and not _is_comment(ctx, line)) or ctx.install
        if strong or (_READ_VERBS.search(line) and not negated):
            ctx.emit("credentials.read", n, m.start() + 1)
        else:
            ctx.emit(
                "credentials.read",
                n,
                m.start() + 1,
                severity=Severity.MEDIUM,
                message="The text names a credential store (mentioned, not read).",
            )
    elif dotenv and not ctx.is_doc:
        ctx.emit(
            "credentials.read",
            n,
            dotenv.start() + 1,
            severity=Severity.MEDIUM,
            message="A .env file is read; fine for the skill's own key, worth a look.",
        )


def _prompt(ctx: FileContext, n: int, raw: str) -> None:
    line, where = _unhidden(raw)  # "ig\u200bnore previous instructions" reads as it renders
    split = " (split by invisible characters)" if line != raw else ""
    for rule, pattern in (
        ("prompt.override_instructions", PROMPT_OVERRIDE),
        ("prompt.conceal_from_user", PROMPT_CONCEAL),
    ):
        m = pattern.search(line)
        if m:
            quoted = _is_quoted(line, m.start(), m.end())
            ctx.emit(
                rule,
                n,
                where(m.start()) + 1,
                severity=Severity.MEDIUM if quoted else None,
                message="Quoted injection phrase (mentioned, not addressed to the agent)."
                if quoted
                else RULES[rule].message.removesuffix(".") + split + ".",
            )
    m = PROMPT_EXFIL.search(line)
    if m:
        strong = _EXFIL_TARGET.search(line) and not _is_quoted(line, m.start(), m.end())
        ctx.emit(
            "prompt.exfiltrate", n, where(m.start()) + 1, severity=Severity.HIGH if strong else None
        )


def _unhidden(line: str) -> tuple[str, Callable[[int], int]]:
    """The line without zero-width characters, and a map from its columns back to the line's."""
    if line.isascii() or not _INVISIBLE.search(line):
        return line, lambda i: i
    kept = [i for i, c in enumerate(line) if not _INVISIBLE.match(c)]
    return "".join(line[i] for i in kept), lambda i: kept[i] if i < len(kept) else len(line)


def _is_quoted(line: str, start: int, end: int) -> bool:
    """Whether the phrase sits inside quotes or backticks (a mention, like a security doc)."""
    line = re.sub(r"(?<=\w)'(?=\w)", "\u02bc", line)  # apostrophes in don't/it's
    before = line[:start]
    return bool(re.search(_QUOTED + r"[^`\"'“”«»「」]*$", before)) and bool(
        re.match(r"[^`\"'“”«»「」]*" + _QUOTED, line[end:])
    )
