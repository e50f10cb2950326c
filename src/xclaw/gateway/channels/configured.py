"""The chat channels ``xclaw serve`` starts: only those whose credentials are configured.

Credentials come from the environment (or the project's ``.env``), never from a YAML file:
``TELEGRAM_BOT_TOKEN``; ``QQ_BOT_APP_ID`` + ``QQ_BOT_SECRET``; ``FEISHU_APP_ID`` +
``FEISHU_APP_SECRET`` + ``FEISHU_VERIFICATION_TOKEN`` (+ ``FEISHU_ENCRYPT_KEY``). Each
platform's API address can be moved with ``XCLAW_<NAME>_BASE_URL`` (a proxy, Lark instead of
Feishu, a local fake). ``XCLAW_CHANNEL_DM_SCOPE=shared`` makes all direct messages of a
channel one session (default: one session per peer).

Per platform (the defaults in brackets):

- Telegram: ``XCLAW_TELEGRAM_MODE`` = ``polling`` | ``webhook`` [``webhook`` when
  ``XCLAW_TELEGRAM_WEBHOOK_URL`` is set, else ``polling``]; ``XCLAW_TELEGRAM_WEBHOOK_URL``
  (the public ``https://`` address Telegram posts to), ``XCLAW_TELEGRAM_WEBHOOK_PATH``
  [``/channels/telegram/webhook``, where the gateway takes it], ``TELEGRAM_WEBHOOK_SECRET``
  [random at each start].
- QQ: ``XCLAW_QQ_GROUP_SCOPE`` = ``member`` | ``group`` [``member``];
  ``XCLAW_QQ_PROACTIVE`` = ``1`` to send what passive replies cannot carry as proactive
  messages [``0``: QQ stopped them on 2025-04-21].
- Feishu/Lark: ``XCLAW_FEISHU_GROUP_SCOPE`` = ``chat`` | ``sender`` [``chat``];
  ``XCLAW_FEISHU_GROUP_MENTION`` = ``1`` | ``0`` [``1``: in groups only tasks that @mention
  the bot].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import SecretStr, ValidationError

from xclaw.core.errors import ConfigError
from xclaw.core.extras import require

if TYPE_CHECKING:
    from xclaw.gateway.channels.base import ChatAdapter, DmScope
    from xclaw.gateway.gateway import Gateway

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _choice(env: Mapping[str, str], key: str, choices: tuple[str, ...], default: str) -> str:
    raw = env.get(key, "").strip() or default
    if raw not in choices:
        raise ConfigError(
            f"{key}={raw!r} is not one of {', '.join(choices)}.",
            hint=f"Set {key} to {' or '.join(choices)}, or leave it unset ({default}).",
        )
    return raw


def _flag(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE or raw in _FALSE:
        return raw in _TRUE
    raise ConfigError(f"{key}={raw!r} is not a yes/no value.", hint=f"Set {key} to 1 or 0.")


def _scope(env: Mapping[str, str]) -> DmScope:
    raw = env.get("XCLAW_CHANNEL_DM_SCOPE", "per-peer")
    if raw == "shared":
        return "shared"
    if raw != "per-peer":
        raise ConfigError(
            f"XCLAW_CHANNEL_DM_SCOPE={raw!r} is not a scope.",
            hint="Use per-peer (one session per person) or shared.",
        )
    return "per-peer"


def _base(env: Mapping[str, str], name: str, field: str) -> dict[str, Any]:
    url = env.get(f"XCLAW_{name}_BASE_URL")
    return {field: url} if url else {}


def configured_channels(gateway: Gateway, env: Mapping[str, str]) -> list[ChatAdapter]:
    """An adapter for every platform with credentials in ``env``, in a fixed order."""
    scope = _scope(env)
    adapters: list[ChatAdapter] = []
    if env.get("TELEGRAM_BOT_TOKEN"):
        adapters.append(_telegram(gateway, env, scope))
    if env.get("QQ_BOT_APP_ID") and env.get("QQ_BOT_SECRET"):
        from xclaw.gateway.channels.qq import QQAdapter, QQSettings

        qq = QQSettings(
            app_id=env["QQ_BOT_APP_ID"],
            client_secret=SecretStr(env["QQ_BOT_SECRET"]),
            group_scope=_choice(env, "XCLAW_QQ_GROUP_SCOPE", ("member", "group"), "member"),
            proactive=_flag(env, "XCLAW_QQ_PROACTIVE", False),
            **_base(env, "QQ", "api_base"),
        )
        adapters.append(QQAdapter(gateway, qq, dm_scope=scope))
    if env.get("FEISHU_APP_ID") and env.get("FEISHU_APP_SECRET"):
        adapters.append(_feishu(gateway, env, scope))
    return adapters


def _telegram(gateway: Gateway, env: Mapping[str, str], scope: DmScope) -> ChatAdapter:
    require("channels", "the Telegram channel (TELEGRAM_BOT_TOKEN)", ["telegram"])
    from xclaw.gateway.channels.telegram import TelegramAdapter, TelegramSettings

    url = env.get("XCLAW_TELEGRAM_WEBHOOK_URL", "").strip() or None
    mode = _choice(
        env, "XCLAW_TELEGRAM_MODE", ("polling", "webhook"), "webhook" if url else "polling"
    )
    fields: dict[str, Any] = {"mode": mode, **_base(env, "TELEGRAM", "base_url")}
    if mode == "webhook":
        fields["webhook_url"] = _webhook_url(url)
        if env.get("XCLAW_TELEGRAM_WEBHOOK_PATH"):
            fields["webhook_path"] = env["XCLAW_TELEGRAM_WEBHOOK_PATH"]
        if env.get("TELEGRAM_WEBHOOK_SECRET"):
            fields["webhook_secret"] = SecretStr(env["TELEGRAM_WEBHOOK_SECRET"])
    try:
        tg = TelegramSettings(bot_token=SecretStr(env["TELEGRAM_BOT_TOKEN"]), **fields)
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(str(p) for p in problem.get("loc", ())) or "webhook"
        raise ConfigError(
            f"The Telegram settings are not valid ({where}: {problem['msg']}).",
            hint="Check XCLAW_TELEGRAM_WEBHOOK_PATH (a path such as /channels/telegram/webhook) "
            "and TELEGRAM_WEBHOOK_SECRET (1-256 of A-Z a-z 0-9 _ -).",
        ) from None
    return TelegramAdapter(gateway, tg, dm_scope=scope)


def _webhook_url(url: str | None) -> str:
    if url is None:
        raise ConfigError(
            "XCLAW_TELEGRAM_MODE=webhook needs XCLAW_TELEGRAM_WEBHOOK_URL.",
            hint="Set XCLAW_TELEGRAM_WEBHOOK_URL to the public https:// address of this "
            "gateway's webhook path, or use XCLAW_TELEGRAM_MODE=polling.",
        )
    parts = urlsplit(url)
    loopback = parts.scheme == "http" and parts.hostname in _LOOPBACK
    if not parts.hostname or (parts.scheme != "https" and not loopback):
        raise ConfigError(
            f"XCLAW_TELEGRAM_WEBHOOK_URL={url!r} is not an https:// address.",
            hint="Telegram only posts to https:// (put a TLS reverse proxy in front of xclaw).",
        )
    return url


def _feishu(gateway: Gateway, env: Mapping[str, str], scope: DmScope) -> ChatAdapter:
    require("channels", "the Feishu channel (FEISHU_APP_ID)", ["cryptography"])
    from xclaw.gateway.channels.feishu import FeishuAdapter, FeishuSettings

    if not env.get("FEISHU_VERIFICATION_TOKEN"):
        raise ConfigError(
            "FEISHU_APP_ID is set but FEISHU_VERIFICATION_TOKEN is not.",
            hint="Copy the verification token from the app's event subscription page.",
        )
    key = env.get("FEISHU_ENCRYPT_KEY")
    settings = FeishuSettings(
        app_id=env["FEISHU_APP_ID"],
        app_secret=SecretStr(env["FEISHU_APP_SECRET"]),
        verification_token=SecretStr(env["FEISHU_VERIFICATION_TOKEN"]),
        encrypt_key=SecretStr(key) if key else None,
        group_scope=_choice(env, "XCLAW_FEISHU_GROUP_SCOPE", ("chat", "sender"), "chat"),
        group_mention=_flag(env, "XCLAW_FEISHU_GROUP_MENTION", True),
        **_base(env, "FEISHU", "base_url"),
    )
    return FeishuAdapter(gateway, settings, dm_scope=scope)
