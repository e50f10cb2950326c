"""The Telegram channel against a fake Bot API: a task, an approval, a split reply, no leaks."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_feishu import serve
from fake_telegram import FakeTelegram, utf16_units
from gateway_support import exec_turn, scripted_gateway
from pydantic import SecretStr

from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.channels.telegram import SECRET_HEADER, TelegramAdapter, TelegramSettings
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import create_app
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(30)

TOKEN = "123456789:AAHfakeTelegramBotTokenForTests-0123456"
ALICE, MALLORY = 1001, 2002
MARK = "telegram-ran-42"
EXEC = exec_turn(MARK)
LONG = "\n".join(f"line {i:04d} " + "x" * 40 for i in range(120))  # ~6000 chars > 4096


@asynccontextmanager
async def telegram(
    root: Path, script: list[dict[str, Any] | str], token: str = TOKEN, **settings: Any
) -> AsyncIterator[tuple[FakeTelegram, TelegramAdapter, Gateway]]:
    store = open_store()

    gateway = scripted_gateway(root, script, store)
    async with FakeTelegram(TOKEN, max_wait=0.5) as fake:
        chosen = TelegramSettings(
            bot_token=SecretStr(token), base_url=fake.base_url, poll_timeout=5, **settings
        )
        adapter = TelegramAdapter(gateway, chosen)
        try:
            yield fake, adapter, gateway
        finally:
            await adapter.stop()
            await gateway.close()
            store.close()


async def test_a_task_with_an_approval_over_telegram(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with telegram(root, [EXEC, LONG]) as (fake, adapter, _gateway):
        await adapter.start()
        await fake.user_says(
            -5005, "run it in the group", chat_type="group"
        )  # not a private chat: ignored
        await fake.user_says(
            ALICE,
            None,
            sticker={
                "file_id": "s1",
                "file_unique_id": "u1",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
                "type": "regular",
            },
        )  # not text: ignored
        await fake.user_says(ALICE, "run it")
        asking = await fake.wait_for(ALICE, "Approval needed")
        request_id = re.search(r"/approve (\w+)", asking)
        assert request_id is not None, asking
        rid = request_id.group(1)
        assert not (root / "out.txt").exists()

        await fake.user_says(MALLORY, f"/approve {rid}")  # another peer: refused
        refused = await fake.wait_for(MALLORY, "No such open question")
        assert refused.startswith("Error APPROVAL_UNKNOWN")
        await asyncio.sleep(0.2)
        assert not (root / "out.txt").exists()

        await fake.user_says(ALICE, f"/approve {rid}")  # the same peer: the command runs
        await fake.wait_for(ALICE, "line 0119")
        await adapter.channel_for(str(ALICE)).flushed()
        alice = fake.texts_to(ALICE)

    assert (root / "out.txt").read_text().strip() == MARK
    assert alice[0] == asking
    reply = alice[1:]
    assert len(reply) == 2 and all(len(piece) <= 4096 for piece in reply)
    assert "".join(reply) == LONG
    assert fake.texts_to(MALLORY) == [refused]
    assert fake.texts_to(-5005) == []
    assert "getUpdates" in fake.calls and "401" not in fake.calls
    assert caplog.records, "the SDK and httpx log at DEBUG/INFO: they must be masked, not silent"
    assert TOKEN not in caplog.text
    assert TOKEN.split(":")[1] not in caplog.text


async def test_a_wrong_token_is_refused_and_not_logged(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "987654321:AAHwrongTelegramBotTokenForTests-65432"
    async with telegram(root, ["unused"], token=wrong) as (fake, adapter, _gateway):
        with pytest.raises(RuntimeError) as err:
            await adapter.start()
    assert fake.calls == ["401"]
    assert wrong not in str(err.value) and wrong.split(":")[1] not in caplog.text
    assert "InvalidToken" in str(err.value)


async def test_polling_survives_server_errors(root: Path) -> None:
    async with telegram(root, ["still here"], retry_delay=0.05) as (fake, adapter, _gateway):
        fake.failures = [502, 409, 502]
        await adapter.start()
        await fake.user_says(ALICE, "hello?")
        assert await fake.wait_for(ALICE, "still here") == "still here"
    assert fake.failures == [] and fake.calls.count("getUpdates") >= 4


def test_settings_keep_the_token_secret() -> None:
    settings = TelegramSettings(bot_token=SecretStr(TOKEN))
    assert settings.base_url == "https://api.telegram.org"
    assert TOKEN not in repr(settings) and TOKEN not in settings.model_dump_json()


# -- webhooks: getUpdates answers 409 while one is set ------------------------------------------
ELSEWHERE = {"url": "https://old-deployment.example/hook", "secret_token": ""}


async def test_a_webhook_left_on_the_bot_is_deleted_once_and_polling_works(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with telegram(root, ["polled after all"], retry_delay=0.05) as (fake, adapter, _gw):
        fake.webhook = dict(ELSEWHERE)
        await adapter.start()
        await fake.wait_call("deleteWebhook")
        await fake.user_says(ALICE, "hello?")
        assert await fake.wait_for(ALICE, "polled after all") == "polled after all"
    assert fake.calls.count("deleteWebhook") == 1 and fake.webhook is None
    first = fake.calls.index("getUpdates")
    assert fake.calls[first + 1] == "deleteWebhook"  # right after the first 409, not retried
    assert "deleting the webhook once" in caplog.text and "XCLAW_TELEGRAM_MODE" in caplog.text
    assert adapter.failure is None


async def test_a_webhook_set_again_stops_polling_with_a_code(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with telegram(root, ["unused"], retry_delay=0.05) as (fake, adapter, _gw):
        fake.webhook = dict(ELSEWHERE)
        fake.rearm_webhook = dict(ELSEWHERE)  # another deployment sets it back at once
        await adapter.start()
        assert adapter._poller is not None
        await asyncio.wait_for(adapter._poller, 10)  # polling stopped by itself
        polls = fake.calls.count("getUpdates")
    assert adapter.failure is not None and adapter.failure.code == "TELEGRAM_WEBHOOK_ACTIVE"
    assert "XCLAW_TELEGRAM_WEBHOOK_URL" in str(adapter.failure)
    assert fake.calls.count("deleteWebhook") == 1  # not a fight over the bot
    assert polls == 2  # the 409, the deleteWebhook, the 409 again: then no more
    assert "TELEGRAM_WEBHOOK_ACTIVE" in caplog.text


async def test_a_bot_in_webhook_mode(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with telegram(root, ["by webhook"], mode="webhook", webhook_url="https://x/") as (
        fake,
        adapter,
        gateway,
    ):
        app = create_app(gateway, GatewayAuth("t" * 32), channels=[adapter])
        async with serve(app) as url, httpx.AsyncClient(base_url=url) as http:
            hook = url + adapter.settings.webhook_path
            adapter.settings = adapter.settings.model_copy(update={"webhook_url": hook})
            await adapter.start()  # setWebhook, with a secret of its own
            assert fake.webhook is not None and fake.webhook["url"] == hook
            secret = fake.webhook["secret_token"]
            assert len(secret) >= 32

            await fake.user_says(ALICE, "hello by webhook")
            assert await fake.wait_for(ALICE, "by webhook") == "by webhook"

            # what Telegram does not send is refused: no secret, a wrong one, not JSON
            path = adapter.settings.webhook_path
            update = {"update_id": 1, "message": {}}
            wrong = {SECRET_HEADER: "not-the-secret"}
            assert (await http.post(path, json=update)).status_code == 401
            assert (await http.post(path, json=update, headers=wrong)).status_code == 401
            right = {SECRET_HEADER: secret}
            assert (await http.post(path, content=b"{", headers=right)).status_code == 400
            big = b"[" + b"0," * (1 << 20) + b"0]"
            assert (await http.post(path, content=big, headers=right)).status_code == 413
            # Telegram's retry of an update already taken runs nothing twice
            sent = fake.updates_sent[0]
            assert (await http.post(path, json=sent, headers=right)).status_code == 200
            await asyncio.sleep(0.3)
    assert fake.texts_to(ALICE) == ["by webhook"]
    assert "getUpdates" not in fake.calls
    assert fake.deliveries == [200]
    assert secret not in caplog.text and TOKEN not in caplog.text


async def test_the_limit_is_counted_in_utf16_code_units(root: Path) -> None:
    faces = "😀" * 3000  # 3,000 characters, 6,000 UTF-16 code units: over Telegram's 4,096
    async with telegram(root, [faces]) as (fake, adapter, _gw):
        await adapter.start()
        await fake.user_says(ALICE, "smile")
        await fake.wait_for(ALICE, "😀")
        await adapter.channel_for(str(ALICE)).flushed()
    pieces = fake.texts_to(ALICE)
    assert len(pieces) == 2 and "".join(pieces) == faces
    assert all(utf16_units(p) <= 4096 for p in pieces)
