"""Secrets never leave through us: masking for text we print or store, and an environment
without credentials for the programs a model starts.

Hand-written because the patterns are ours to choose: well-known key formats plus
``name=value`` pairs whose name says it holds a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar, cast

J = TypeVar("J")

MASK = "[REDACTED]"

_SECRET_NAME = re.compile(
    r"(API_?KEY|ACCESS_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|PRIVATE_?KEY|CREDENTIALS?|AUTH)",
    re.IGNORECASE,
)
_KEY_FORMATS = re.compile(
    r"(sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})"  # JWT
)
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{12,}=*")
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:api_?key|secret|token|password|passwd)[A-Z0-9_]*)"
    r"(\s*[=:]\s*)(['\"]?)([^\s'\"&]{6,})"
)


def redact(text: str) -> str:
    """Mask well-known key formats, bearer tokens and ``*_KEY=value`` style assignments."""
    if not text:
        return text
    text = _KEY_FORMATS.sub(MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _ASSIGNMENT.sub(lambda m: m.group(1) + m.group(2) + m.group(3) + MASK, text)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment minus variables whose names say they hold credentials."""
    return {k: v for k, v in env.items() if not is_secret_name(k)}


def redact_json(value: J) -> J:
    """``redact`` applied to every string inside a JSON-like value (same shape back)."""
    if isinstance(value, str):
        return cast(J, redact(value))
    if isinstance(value, dict):
        return cast(J, {k: redact_json(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return cast(J, [redact_json(v) for v in value])
    return value
