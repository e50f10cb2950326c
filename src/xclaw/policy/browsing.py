"""What a browser call may do without a human (seed 003 ch. 07, on top of seed 000 §8).

The browser tools describe what a call would touch (``Access.opens``: addresses with what their
host resolved to; ``Access.element``: the element a click or key press would activate, read
from the live page just before). This module judges those facts:

- an address other than http(s) asks (``file:`` is judged as a path by the engine instead);
- a host that is, or resolves to, a private, link-local, reserved or loopback address asks,
  ``localhost`` and ``127.x`` written out included: a page on this machine may be a database
  console or a router's admin page. What may be opened there without asking is said by
  per-site grants (``Grant("site", origin)``): a human's *allow for task*, the ports this
  session's own processes serve and the user config's ``browsing.allow_hosts`` (both put in
  as grants by ``tools/browser_guard.py``);
- activating an element whose text, label or link says delete / remove / pay / buy ..., or
  that submits a form with payment fields, asks, every time (no *allow for task*).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from xclaw.core.tooling import Decision, Grant, PageElement, Risk, WebAddress
from xclaw.policy.reach import is_loopback_host, non_public_kind

_WEB_SCHEMES = frozenset({"http", "https"})
_HARMLESS_URLS = frozenset({"about:blank"})
_DESTRUCTIVE_WORDS = re.compile(
    r"\b(?:delete|remove|erase|destroy|discard|wipe|purge|terminate|deactivate|revoke"
    r"|close\s+(?:my\s+|your\s+|the\s+)?account|empty\s+(?:the\s+)?(?:trash|bin|cart)"
    r"|pay|payment|pay\s+now|purchase|buy|checkout|check\s+out|place\s+(?:my\s+|your\s+)?order"
    r"|order\s+now|confirm\s+(?:order|purchase|payment)|donate|transfer|send\s+money|withdraw)\b"
    r"|删除|移除|清空|注销|支付|付款|购买|下单|结算|提交订单|转账",
    re.IGNORECASE,
)
_PAYMENT_FIELDS = re.compile(
    r"cc-(?:number|csc|exp)|card.?(?:number|no\b|num)|\bcvv|\bcvc|\bcsc\b|security.?code"
    r"|expir|\biban\b|routing.?number|account.?number|卡号|信用卡",
    re.IGNORECASE,
)


def file_url_path(url: str) -> str | None:
    """The local path a ``file:`` URL names (None for any other URL, or a remote file host)."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path) or "/"


def judge_address(address: WebAddress) -> Decision | None:
    """An *ask* when opening ``address`` needs a human; None when it may go ahead."""
    url = address.url.strip()
    if url.lower() in _HARMLESS_URLS:
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _WEB_SCHEMES:
        return Decision(
            "ask",
            Risk.SENSITIVE,
            f"opens a {scheme or 'schemeless'}: address, not a web page: {_clip(url)}",
            code="BROWSER_SCHEME_NEEDS_APPROVAL",
        )
    host = (parts.hostname or "").lower()
    kind = "loopback" if is_loopback_host(host) else non_public_kind(host)
    if kind is not None:
        why = f"{host} is a {kind} address"
    else:
        reached = [(ip, non_public_kind(ip)) for ip in address.resolved]
        found = next(((ip, k) for ip, k in reached if k is not None), None)
        if found is None:
            return None
        why = f"{host} resolves to {found[0]}, a {found[1]} address"
    return Decision(
        "ask",
        Risk.SENSITIVE,
        f"opens {_clip(url)}: {why}, inside a private network or this machine",
        code="BROWSER_PRIVATE_ADDRESS",
        grant=Grant("site", site_origin(url)),
    )


def site_origin(url: str) -> str:
    """The origin a site grant names: ``scheme://host:port`` with the port written out, and
    every loopback spelling (``127.0.0.1``, ``[::1]``, ``localhost``) as ``localhost``, since
    they are one machine. Empty for a URL without a web scheme or a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _WEB_SCHEMES or not host:
        return ""
    if is_loopback_host(host):
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"


def host_origins(entry: str) -> tuple[str, ...]:
    """The site origins a ``browsing.allow_hosts`` entry (``host`` or ``host:port``) names:
    http and https; without a port, their default ports."""
    entry = entry.strip()
    if "://" in entry:
        found = site_origin(entry)
        return (found,) if found else ()
    return tuple(o for o in (site_origin(f"http://{entry}"), site_origin(f"https://{entry}")) if o)


def judge_element(element: PageElement) -> Decision | None:
    """An *ask* (destructive, never granted for the task) when activating ``element`` could
    delete, pay or buy something; None otherwise."""
    reason = destructive_reason(element)
    if reason is None:
        return None
    what = " / ".join(dict.fromkeys(x for x in (element.text, element.label) if x)) or element.tag
    return Decision(
        "ask",
        Risk.DESTRUCTIVE,
        f"{element.action} on {_clip(what)!r} {reason} (page {_clip(element.page_url)})",
        code="BROWSER_DESTRUCTIVE_ACTION",
    )


def destructive_reason(element: PageElement) -> str | None:
    if element.submits_form:
        paying = [f for f in element.form_fields if _PAYMENT_FIELDS.search(f)]
        if paying:
            return f"submits a payment form (field {_clip(paying[0])})"
    href_path = urlsplit(element.href).path.replace("-", " ").replace("_", " ")
    for source, text in (
        ("text", element.text),
        ("label", element.label),
        ("link", href_path),
    ):
        found = _DESTRUCTIVE_WORDS.search(text)
        if found:
            return f"looks destructive: its {source} says {found.group(0)!r}"
    return None


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
