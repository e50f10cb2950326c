"""Secrets never leave through us: masking for text we print or store, and an environment
without credentials for the programs a model starts.

One redactor for everything that leaves outside the transcript (CLI output, the live view,
traces, events, exports, error messages). It masks, in this order:
- the values of our own secret-named environment variables, wherever they appear (by value);
- private-key blocks (PEM and PGP), body included, also when cut off before their END line;
- well-known key formats (OpenAI, Anthropic, GitHub, AWS, Slack, Google, JWT, ...);
- passwords in URLs, ``Authorization`` headers, bare bearer tokens, ``curl -u`` and netrc;
- credentials in query strings (``?api_key=``, ``&sig=``, ``key=``), percent-encoded too;
- values named as secrets: ``name=value``, ``name: value``, ``"name": "value"``, ``--name value``.

Hand-written because the patterns are ours to choose, and false positives matter as much as
misses: what is masked is what a human can no longer read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TypeVar, cast

J = TypeVar("J")

MASK = "[REDACTED]"

# -- which names hold secrets ---------------------------------------------------------------
# Environment names: anything that mentions a credential. AUTHOR (GIT_AUTHOR_NAME) is a
# person, a TOKENIZER splits text and a KEYBOARD has keys: none of them is a credential.
_SECRET_ENV_PART = re.compile(
    r"PASS|PWD|SECRET|TOKEN(?!IZ)|KEY(?!BOARD)|AUTH(?!OR)|CREDENTIAL|JWT", re.IGNORECASE
)
# The shell's working directories, not passwords.
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD"})
# Named explicitly so the list says what it must cover even if the parts above change.
_SECRET_ENV_NAMES = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_API_KEY",
        "SENTRY_DSN",
        "XCLAW_DATABASE_URL",  # postgresql://user:password@host/db
        "XCLAW_REDIS_URL",
        "DATABASE_URL",
        "REDIS_URL",
        "DB_PASS",
        "MYSQL_PWD",
        "PGPASSWORD",
    }
)

# Field names in text and JSON: stricter, because ``key``, ``tokens`` or ``tokenizer`` alone
# name ordinary things. These words anywhere in a name make it secret...
_STRONG_FIELD = re.compile(
    r"passw(?:or)?ds?|passphrase|secret|api_?key|credential|private_?key|access_?key"
    r"|authorization|connection_?string"
)
# ...these only as the last word (``auth_token`` yes, ``token_count`` and ``auth_url`` no)...
_LAST_WORDS = frozenset({"token", "auth", "pass", "pwd", "jwt", "cookie", "dsn"})
# ...and ``key`` only after one of these (``account_key`` yes, ``sort_key`` no).
_KEY_QUALIFIERS = frozenset(
    {"signing", "encryption", "master", "account", "client", "session", "shared", "app"}
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ENV_STYLE = re.compile(r"[A-Z][A-Z0-9_]*")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable holds a credential (and is kept from child programs)."""
    upper = name.upper()
    if upper in _NOT_SECRET_ENV:
        return False
    return upper in _SECRET_ENV_NAMES or bool(_SECRET_ENV_PART.search(name))


@lru_cache(maxsize=4096)  # a pure function of the name, asked for every key of every event
def is_secret_field(name: str) -> bool:
    """Whether a key in text or JSON (``api_key``, ``clientSecret``, ``X-Auth-Token``) names a
    secret. Environment-style names (``STRIPE_KEY``) follow the environment rule."""
    bare = name.strip("-_.")
    if bare.upper() in _NOT_SECRET_ENV:
        return False
    if _ENV_STYLE.fullmatch(bare) and is_secret_name(bare):
        return True
    words = [w for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", bare).lower()) if w]
    if not words:
        return False
    if _STRONG_FIELD.search("_".join(words)) or words[-1] in _LAST_WORDS:
        return True
    return any(b == "key" and a in _KEY_QUALIFIERS for a, b in zip(words, words[1:], strict=False))


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment minus variables whose names say they hold credentials."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}


# -- secrets known by value -------------------------------------------------------------------
_MIN_VALUE_LEN = 6  # shorter values are too often ordinary words
_PLAIN_VALUES = frozenset({"enabled", "disabled", "default"})


def _maskable(value: str) -> bool:
    if len(value) < _MIN_VALUE_LEN or value.lower() in _PLAIN_VALUES:
        return False
    try:
        # A variable naming where a credential lives (a socket, a key file) holds a path, not a
        # secret; masking it would only hide directories from the reader.
        return not (value.startswith(("/", "~")) and os.path.exists(os.path.expanduser(value)))
    except (OSError, ValueError):
        return True


def secret_values(env: Mapping[str, str]) -> set[str]:
    """Values of ``env``'s secret-named variables that are worth masking wherever they appear."""
    return {v for k, v in env.items() if is_secret_name(k) and _maskable(v)}


class _KnownValues:
    """Secret values masked by value: our own environment's (read once) plus registered ones."""

    def __init__(self) -> None:
        self.from_env: set[str] | None = None  # None until first use
        self.registered: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        # Texts a full pass found nothing in (event keys, tool names, a reply recorded in
        # several places): asked again, they are returned as they are. Only clean texts are
        # kept, never one that held a secret; emptied whenever the known values change.
        self.clean: set[str] = set()

    def load(self, env: Mapping[str, str]) -> None:
        self.from_env = secret_values(env)
        self._compile()

    def add(self, value: str) -> None:
        if len(value) >= _MIN_VALUE_LEN and value not in self.registered:
            self.registered.add(value)
            self._compile()

    def mask(self, text: str) -> str:
        if self.from_env is None:
            self.load(os.environ)
        return self.pattern.sub(MASK, text) if self.pattern is not None else text

    def _compile(self) -> None:
        values = (self.from_env or set()) | self.registered
        # The same value inside JSON text (a quote or backslash in it escaped) is still it.
        forms = values | {json.dumps(v, ensure_ascii=False)[1:-1] for v in values}
        ordered = sorted(forms, key=len, reverse=True)  # longest first: no half-masked value
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.clean = set()  # a text clean before may hold a value known from now on


_KNOWN = _KnownValues()


def register_secret(value: str) -> None:
    """Mask ``value`` wherever it appears from now on (values shorter than 6 are ignored)."""
    _KNOWN.add(value)


def register_secrets(values: Mapping[str, str]) -> None:
    """Register the values of ``values``' secret-named variables (a ``.env`` file read, a
    mapping built from one), as the environment's are; paths, short words and references
    (``${OTHER_KEY}``, ``<your key>``) are skipped."""
    for value in secret_values(values):
        if not _NOT_A_VALUE.fullmatch(value):
            _KNOWN.add(value)


def load_environment_secrets(env: Mapping[str, str] | None = None) -> None:
    """Re-read the secret values from ``env`` (default ``os.environ``). Done lazily once per
    process; call again after the environment changed. Registered values are kept."""
    _KNOWN.load(os.environ if env is None else env)


# -- private keys -------------------------------------------------------------------------------
_KEY_KIND = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
_PEM_BLOCK = re.compile(
    rf"-----BEGIN (?P<kind>{_KEY_KIND})-----.*?(?:-----END (?P=kind)-----|\Z)", re.DOTALL
)
_PEM_MARK = re.compile(rf"-----(BEGIN|END) {_KEY_KIND}-----")
_PEM_END = re.compile(rf"-----END {_KEY_KIND}-----")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]{4,}")


def _mask_private_keys(text: str) -> str:
    if "PRIVATE KEY" not in text:
        return text
    text = _PEM_BLOCK.sub(MASK, text)
    return _mask_key_tails(text) if "-----END " in text else text


def _mask_key_tails(text: str) -> str:
    """An END line whose BEGIN was cut off (output kept head and tail): the body lines before
    it are masked. Walked backwards in Python, so a huge base64 blob stays linear."""
    out: list[str] = []
    last = 0
    for m in _PEM_END.finditer(text):
        start = m.start()
        while True:
            nl = text.rfind("\n", last, start)
            if nl < 0:
                break
            line_start = text.rfind("\n", last, nl) + 1
            line = text[line_start:nl].rstrip("\r")
            if not _BASE64_LINE.fullmatch(line):
                break
            start = line_start
        out.append(text[last:start] + MASK)
        last = m.end()
    out.append(text[last:])
    return "".join(out)


# -- formats, URLs, headers -----------------------------------------------------------------
# "sk-" and "sk_"/"rk_" keys never start inside a word ("disk-check-20261202T061654Z-b03daf"
# is a job id, "work_test_..." a name), but may right after an escape ("\n" in JSON text, "%3D"
# in a URL); the other formats' prefixes are distinctive enough to be found glued to text.
_SK_START = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
_KEY_FORMATS = re.compile(
    rf"({_SK_START}sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{{16,}}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    rf"|{_SK_START}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}"  # Stripe
    r"|\bhf_[A-Za-z0-9]{30,}|\bnpm_[A-Za-z0-9]{36}"  # Hugging Face, npm
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id (long-lived, temporary)
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_\-]{30,}|\bya29\.[0-9A-Za-z_\-]{20,}"  # Google key, OAuth token
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})"  # JWT
)
# scheme://user:password@host (the user may be empty: redis://:password@host).
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/@:?#]*:)([^\s/@?#]+)(?=@)")
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?:bearer|basic|token|digest|negotiate|ntlm|bot|apikey)[ \t]+)?)([^\s\"',;]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer[ \t]+)([A-Za-z0-9._~+/\-]{12,}=*)")
_CURL_USER = re.compile(r"((?:^|\s)(?:-u|--user)[ \t]+[^\s:'\"]+:)([^\s'\"]+)")
_NETRC = re.compile(
    r"(?im)(^[ \t]*(?:machine|default)\b[^\n]*?[ \t]password[ \t]+"
    r"|^[ \t]*password[ \t]+(?=\S+[ \t]*$))(\S+)"
)


# A query parameter (raw or percent-encoded inside another URL): ?name=value, &name=value.
_QUERY_PARAM = re.compile(
    r"(?i)(?:&amp;|[?&]|%3F|%26|%253F|%2526)"
    # only names that may be a credential's (the cheap test first, in the regex engine)
    r"(?P<name>(?=[\w.\-\[\]]{0,80}?(?:pass|pwd|secret|token|key|auth|cred|jwt|cookie|dsn"
    r"|conn|sig|hmac|sas|verifier))[a-z_][\w.\-\[\]]{0,80})(?:=|%3D|%253D)"
    r"(?P<val>(?:(?!%26|%2526)[^&#\s\"'<>\\])+)"
)
# Names URLs carry credentials under that would be ordinary words elsewhere (Google's key=,
# Azure SAS sig=, S3 / CloudFront Signature=).
_QUERY_NAMES = frozenset({"key", "sig", "signature", "hmac", "code_verifier", "sas"})


def _is_query_secret(name: str) -> bool:
    words = [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if w]
    if not words:
        return False
    return (
        is_secret_field(name)
        or "_".join(words) in _QUERY_NAMES
        or words[-1] in ("sig", "signature")
    )


def _mask_query(text: str) -> str:
    out: list[str] = []
    last = pos = 0
    while (m := _QUERY_PARAM.search(text, pos)) is not None:
        if not _is_query_secret(m.group("name")) or _NOT_A_VALUE.fullmatch(m.group("val")):
            pos = m.end("name")  # its value may hold an encoded URL with a credential in it
            continue
        out.append(text[last : m.start("val")] + MASK)
        last = pos = m.end("val")
    out.append(text[last:])
    return "".join(out)


def _mask_bearer(m: re.Match[str]) -> str:
    # All-lowercase letters is a word ("bearer authentication"), not a token.
    token = m.group(2)
    return m.group(0) if token.isalpha() and token.islower() else m.group(1) + MASK


# -- named values ---------------------------------------------------------------------------------
# name, separator, and (in a lookahead, so a harmless match never hides what its value holds)
# a quoted or bare value. Quotes may be JSON-escaped: {\"password\": \"...\"} inside a string.
_ASSIGNMENT = re.compile(
    r"(?P<q1>\\?[\"'])?(?<![\w.])(?P<name>[A-Za-z_][\w.\-]{0,80})(?(q1)(?P=q1)\]?)"
    r"(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*)"
    # A quoted value cut off before its closing quote (truncated output) runs to the line's end.
    r"(?=(?P<q2>\\?[\"'])(?P<qval>(?:\\.|(?!(?P=q2))[^\n])*?)(?:(?P=q2)|(?=\n)|\Z)"
    # A placeholder in angle brackets is one value, spaces included (``<your key>``).
    r"|(?P<val><[^<>\n]{1,80}>|[^\s'\"&;=][^\s'\"&;]*))"
)
_FLAG = re.compile(
    r"(?<!\S)--?(?P<name>[A-Za-z][\w\-]{1,60})[ \t]+"
    r"(?=(?P<q2>[\"'])(?P<qval>[^\"'\n]*)(?P=q2)|(?P<val>[^\s'\"\-][^\s'\"]*))"
)
# Values that are not secrets: literals, type names, references, placeholders, a header scheme.
# A placeholder is what a hint shows where the user's own value goes (``export KEY=...``): the
# variable's name must stay readable, and an ellipsis or ``<...>`` is no one's secret.
_NOT_A_VALUE = re.compile(
    r"(?:true|false|null|none|nil|yes|no|on|off|required|optional(?:\[.*)?|str|int|bytes|bool"
    r"|string|secretstr|bearer|basic|token|digest|\*+|<[^>]*>|\{\{.*|\.{3,}|…"
    # References to where the secret lives: $DB_PASSWORD, ${TOKEN}, os.environ[...], getenv(...)
    r"|(?-i:\$\{?[A-Z_][A-Z0-9_]*\}?)|(?:os\.environ|os\.getenv|process\.env|getenv|env)[\[.(].*"
    r"|\[REDACTED\].*)[,;.)\]}]*",
    re.IGNORECASE,
)


# Every name ``is_secret_field`` accepts holds one of these: a cheap first test, because most
# ``x = y`` in code are not about credentials.
_NAME_HINT = re.compile(r"pass|pwd|secret|token|key|auth|credential|jwt|cookie|dsn|conn", re.I)


def _mask_named(pattern: re.Pattern[str], text: str) -> str:
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        name = m.group("name")
        if m.start() < last or not _NAME_HINT.search(name):
            continue  # inside a value already masked, or not a credential's name
        group = "qval" if m.group("qval") is not None else "val"
        start, end = m.span(group)
        value = m.group(group)
        if start == end or not is_secret_field(name) or _not_a_value(value, name):
            continue
        out.append(text[last:start] + MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


def _not_a_value(value: str, name: str) -> bool:
    # ``password=password`` is a keyword argument passing a variable along.
    return bool(_NOT_A_VALUE.fullmatch(value)) or value.rstrip(",;)") == name


_CLEAN_TEXT_MAX = 2048  # longer texts seldom come back: not worth remembering
_CLEAN_TEXTS_MAX = 4096


def redact(text: str) -> str:
    """Mask every secret this module knows in ``text`` (see the module docstring)."""
    if not text or text in _KNOWN.clean:
        return text
    masked = _redact_all(text)
    if masked == text and len(text) <= _CLEAN_TEXT_MAX:
        clean = _KNOWN.clean
        if len(clean) >= _CLEAN_TEXTS_MAX:
            clean.clear()
        clean.add(text)
    return masked


def _redact_all(text: str) -> str:
    text = _KNOWN.mask(text)
    text = _mask_private_keys(text)
    text = _KEY_FORMATS.sub(MASK, text)
    if "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK, text)
    if "=" in text or "%" in text:
        text = _mask_query(text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(_mask_bearer, text)
    text = _CURL_USER.sub(lambda m: m.group(1) + MASK, text)
    text = _NETRC.sub(lambda m: m.group(1) + MASK, text)
    text = _mask_named(_ASSIGNMENT, text)
    return _mask_named(_FLAG, text) if "-" in text else text


def redact_json(value: J) -> J:
    """``redact`` applied to every string inside a JSON-like value (same shape back); strings
    under a key that names a secret (``password``, ``api_key``) are masked whatever they hold."""
    return cast(J, _redact_value(value, False))


def _redact_value(value: object, secret: bool) -> object:
    if isinstance(value, str):
        if secret and value and not _NOT_A_VALUE.fullmatch(value):
            return MASK
        return redact(value)
    if isinstance(value, dict):
        return {
            (redact(k) if isinstance(k, str) else k): _redact_value(
                v, secret or (isinstance(k, str) and is_secret_field(k))
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact_value(v, secret) for v in value]
    return value


class LineRedactor:
    """Whole redacted lines from text that arrives in pieces (a live stream).

    A key split across pieces is only recognisable whole, so text is held until its line is
    complete; a private-key block spanning lines is dropped from its BEGIN line to its END line.
    """

    def __init__(self, max_line: int = 16_384) -> None:
        self._pending = ""
        self._in_key = False
        self._max_line = max_line  # a line this long is shown unfinished, not held forever

    def feed(self, text: str) -> list[str]:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if len(self._pending) > self._max_line:
            lines.append(self._pending)
            self._pending = ""
        return self._lines(lines)

    def flush(self) -> list[str]:
        rest, self._pending = self._pending, ""
        out = self._lines([rest]) if rest else []
        self._in_key = False
        return out

    def _lines(self, lines: Iterable[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            if self._in_key:
                end = _PEM_END.search(line)
                if end is None:
                    continue
                self._in_key = False
                line = line[end.end() :]
                if not line.strip():
                    continue
            marks = list(_PEM_MARK.finditer(line))
            self._in_key = bool(marks) and marks[-1].group(1) == "BEGIN"
            out.append(redact(line))
        return out
