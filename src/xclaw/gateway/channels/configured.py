"""The chat channels ``xclaw serve`` starts: only those whose credentials are configured.

Credentials come from the environment (or the project's ``.env``), never from a YAML file:
``TELEGRAM_BOT_TOKEN``; ``QQ_BOT_APP_ID`` + ``QQ_BOT_SECRET``; ``FEISHU_APP_ID`` +
``FEISHU_APP_SECRET`` + ``FEISHU_VERIFICATION_TOKEN`` (+ ``FEISHU_ENCRYPT_KEY``). Each
platform's API address can be moved with ``XCLAW_<NAME>_BASE_URL`` (a proxy, Lark instead of
Feishu, a local fake). ``XCLAW_CHANNEL_DM_SCOPE=shared`` makes all direct messages of a
channel one session (default: one session per peer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from xclaw.core.errors import ConfigError

if TYPE_CHECKING:
    from xclaw.gateway.channels.base import ChatAdapter, DmScope
    from xclaw.gateway.gateway import Gateway


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
        from xclaw.gateway.channels.telegram import TelegramAdapter, TelegramSettings

        tg = TelegramSettings(
            bot_token=SecretStr(env["TELEGRAM_BOT_TOKEN"]), **_base(env, "TELEGRAM", "base_url")
        )
        adapters.append(TelegramAdapter(gateway, tg, dm_scope=scope))
    if env.get("QQ_BOT_APP_ID") and env.get("QQ_BOT_SECRET"):
        from xclaw.gateway.channels.qq import QQAdapter, QQSettings

        qq = QQSettings(
            app_id=env["QQ_BOT_APP_ID"],
            client_secret=SecretStr(env["QQ_BOT_SECRET"]),
            **_base(env, "QQ", "api_base"),
        )
        adapters.append(QQAdapter(gateway, qq, dm_scope=scope))
    if env.get("FEISHU_APP_ID") and env.get("FEISHU_APP_SECRET"):
        adapters.append(_feishu(gateway, env, scope))
    return adapters


def _feishu(gateway: Gateway, env: Mapping[str, str], scope: DmScope) -> ChatAdapter:
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
        **_base(env, "FEISHU", "base_url"),
    )
    return FeishuAdapter(gateway, settings, dm_scope=scope)
