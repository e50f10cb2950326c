"""Which chat channels `xclaw serve` starts (only configured ones), and that the gateway app
runs them for as long as it serves."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from gateway_support import TOKEN

from xclaw.core.errors import ConfigError
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.channels.base import ChatAdapter
from xclaw.gateway.channels.configured import configured_channels
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.store.sqlite import open_store

FULL = {
    "TELEGRAM_BOT_TOKEN": "123:abc",
    "QQ_BOT_APP_ID": "1020",
    "QQ_BOT_SECRET": "qq-secret",
    "FEISHU_APP_ID": "cli_x",
    "FEISHU_APP_SECRET": "fs-secret",
    "FEISHU_VERIFICATION_TOKEN": "fs-token",
    "XCLAW_TELEGRAM_BASE_URL": "http://127.0.0.1:9",
}


def gateway(tmp_path: Path) -> Gateway:
    def no_agent(*_: object) -> object:
        raise AssertionError("no turn runs here")

    return Gateway(no_agent, open_store(), workdir=tmp_path)  # type: ignore[arg-type]


def test_only_configured_channels_start(tmp_path: Path) -> None:
    assert configured_channels(gateway(tmp_path), {}) == []
    names = [c.name for c in configured_channels(gateway(tmp_path), FULL)]
    assert names == ["telegram", "qq", "feishu"]
    qq_only = {k: v for k, v in FULL.items() if k.startswith("QQ_")}
    assert [c.name for c in configured_channels(gateway(tmp_path), qq_only)] == ["qq"]


@pytest.mark.parametrize(
    "env",
    [
        {"FEISHU_APP_ID": "cli_x", "FEISHU_APP_SECRET": "s"},  # no verification token
        {"TELEGRAM_BOT_TOKEN": "1:a", "XCLAW_CHANNEL_DM_SCOPE": "everyone"},
    ],
)
def test_incomplete_or_wrong_channel_settings_are_refused(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with pytest.raises(ConfigError):
        configured_channels(gateway(tmp_path), env)


class Recording(ChatAdapter):
    name = "recording"

    def __init__(self, gw: Gateway, log: list[str]) -> None:
        super().__init__(gw)
        self.log = log

    async def start(self) -> None:
        self.log.append("start")

    async def stop(self) -> None:
        self.log.append("stop")

    async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None:
        self.log.append(f"{peer}: {text}")


def test_the_app_runs_its_channels_while_it_serves(tmp_path: Path) -> None:
    log: list[str] = []
    gw = gateway(tmp_path)
    server = GatewayServer(create_app(gw, GatewayAuth(TOKEN), channels=[Recording(gw, log)]))
    server.start()
    try:
        assert log == ["start"]
        assert httpx.get(server.url + "/healthz").json() == {"ok": True}
    finally:
        server.stop()
    assert log == ["start", "stop"]
    assert "recording" in gw.channels


def test_channel_options_from_the_environment(tmp_path: Path) -> None:
    from xclaw.gateway.channels.feishu import FeishuAdapter
    from xclaw.gateway.channels.qq import QQAdapter
    from xclaw.gateway.channels.telegram import TelegramAdapter

    hook = "https://bot.example.com/tg"
    env = {
        **FULL,
        "XCLAW_TELEGRAM_WEBHOOK_URL": hook,
        "TELEGRAM_WEBHOOK_SECRET": "s3cret_token-1",
        "XCLAW_QQ_GROUP_SCOPE": "group",
        "XCLAW_QQ_PROACTIVE": "1",
        "XCLAW_FEISHU_GROUP_SCOPE": "sender",
        "XCLAW_FEISHU_GROUP_MENTION": "0",
    }
    tg, qq, fs = configured_channels(gateway(tmp_path), env)
    assert isinstance(tg, TelegramAdapter) and tg.settings.mode == "webhook"
    assert tg.settings.webhook_url == hook and hasattr(tg, "router")
    assert isinstance(qq, QQAdapter) and qq.settings.group_scope == "group"
    assert qq.settings.proactive and qq.settings.reply_budget == 5
    assert isinstance(fs, FeishuAdapter) and fs.settings.group_scope == "sender"
    assert not fs.settings.group_mention
    # the defaults: polling (no webhook route), QQ members apart, Feishu groups by chat with @
    tg, qq, fs = configured_channels(gateway(tmp_path), FULL)
    assert isinstance(tg, TelegramAdapter) and tg.settings.mode == "polling"
    assert not hasattr(tg, "router")
    assert isinstance(qq, QQAdapter) and qq.settings.group_scope == "member"
    assert not qq.settings.proactive and qq.settings.group_window == 300
    assert isinstance(fs, FeishuAdapter) and fs.settings.group_scope == "chat"
    assert fs.settings.group_mention


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"XCLAW_TELEGRAM_MODE": "webhook"}, "XCLAW_TELEGRAM_WEBHOOK_URL"),
        ({"XCLAW_TELEGRAM_WEBHOOK_URL": "http://bot.example.com/tg"}, "https://"),
        ({"XCLAW_TELEGRAM_MODE": "push"}, "XCLAW_TELEGRAM_MODE"),
        (
            {"XCLAW_TELEGRAM_WEBHOOK_URL": "https://b.example", "TELEGRAM_WEBHOOK_SECRET": "a b"},
            "TELEGRAM_WEBHOOK_SECRET",
        ),
        ({"XCLAW_QQ_GROUP_SCOPE": "everyone"}, "XCLAW_QQ_GROUP_SCOPE"),
        ({"XCLAW_FEISHU_GROUP_MENTION": "maybe"}, "XCLAW_FEISHU_GROUP_MENTION"),
    ],
)
def test_wrong_channel_options_are_refused_by_name(
    tmp_path: Path, extra: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError) as err:
        configured_channels(gateway(tmp_path), {**FULL, **extra})
    assert named in str(err.value)
