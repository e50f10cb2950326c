"""Gateway auth: one bearer token (made on first start, owner-only file), a browser cookie
derived from it, and an ``Origin`` check for browsers.

Rules: a request is authenticated by ``Authorization: Bearer TOKEN`` or by the
``xclaw_session`` cookie that ``POST /auth/session`` sets (HttpOnly, SameSite=Strict). A token
in a URL is never read. A request that carries an ``Origin`` must come from the gateway's own
origin or one of the configured origins; a cookie alone is only taken together with such an
``Origin`` on WebSockets (browsers always send one). The token is registered with the
redactor, so neither logs nor errors show it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from xclaw.obs.serverlog import RedactingFilter, install_log_redaction
from xclaw.redact import register_secret

__all__ = [
    "COOKIE",
    "LOOPBACK_HOSTS",
    "GatewayAuth",
    "RedactingFilter",
    "gateway_token_path",
    "install_log_redaction",
    "load_gateway_token",
]

COOKIE = "xclaw_session"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
Verdict = Literal["ok", "unauthorized", "forbidden"]


def gateway_token_path() -> Path:
    from xclaw.dirs import data_dir

    folder = data_dir() / "gateway"
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)
    return folder / "token"


def load_gateway_token(path: Path | None = None) -> tuple[str, Path, bool]:
    """(token, file, created): the bridge's owner-only token helper on the gateway's file."""
    from xclaw.bridge.token import load_or_create_token

    token = load_or_create_token(path or gateway_token_path())
    return token.value, token.path, token.created


@dataclass
class GatewayAuth:
    token: str
    origins: Iterable[str] = ()  # extra allowed origins, e.g. "https://box.example:8443"
    # Host names requests may name (DNS rebinding); None: any (a non-loopback bind).
    hosts: Iterable[str] | None = LOOPBACK_HOSTS
    _cookie: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        register_secret(self.token)
        self.origins = frozenset(o.rstrip("/").lower() for o in self.origins)
        if self.hosts is not None:
            extra = {urlsplit(o).hostname or "" for o in self.origins}
            self.hosts = frozenset({h.lower().strip("[]") for h in self.hosts} | extra)
        digest = hmac.new(self.token.encode(), b"xclaw-gateway-cookie", hashlib.sha256)
        self._cookie = digest.hexdigest()
        register_secret(self._cookie)

    def __repr__(self) -> str:
        return "GatewayAuth(token=<hidden>)"

    @property
    def cookie_value(self) -> str:
        return self._cookie

    def bearer_ok(self, headers: Mapping[str, str]) -> bool:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return False
        return hmac.compare_digest(value.strip().encode(), self.token.encode())

    def cookie_ok(self, cookies: Mapping[str, str]) -> bool:
        value = cookies.get(COOKIE, "")
        return bool(value) and hmac.compare_digest(value.encode(), self._cookie.encode())

    def host_ok(self, headers: Mapping[str, str]) -> bool:
        """The ``Host`` names this gateway (a rebound DNS name pointing at loopback does not)."""
        if self.hosts is None:
            return True
        name = urlsplit("//" + headers.get("host", "")).hostname or ""
        return name in self.hosts

    def origin_ok(self, headers: Mapping[str, str]) -> bool:
        """No ``Origin`` (a non-browser client), the gateway's own, or a configured one."""
        if not self.host_ok(headers):
            return False
        origin = headers.get("origin")
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        host = headers.get("host", "").lower()
        return origin in (f"http://{host}", f"https://{host}") or origin in self.origins

    def check(
        self, headers: Mapping[str, str], cookies: Mapping[str, str], *, websocket: bool = False
    ) -> Verdict:
        """401 without a valid credential, 403 from a foreign ``Origin`` or ``Host``."""
        if not self.origin_ok(headers):
            return "forbidden"
        if self.bearer_ok(headers):
            return "ok"
        if self.cookie_ok(cookies) and ("origin" in headers or not websocket):
            return "ok"
        return "unauthorized"
