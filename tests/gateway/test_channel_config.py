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

    async def send_text(self, peer: str, text: str) -> None:
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
