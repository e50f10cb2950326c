"""The Telegram channel against a fake Bot API: a task, an approval, a split reply, no leaks."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_telegram import FakeTelegram
from gateway_support import exec_turn, scripted_gateway
from pydantic import SecretStr

from xclaw.gateway.channels.telegram import TelegramAdapter, TelegramSettings
from xclaw.gateway.gateway import Gateway
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
        settings = TelegramSettings(
            bot_token=SecretStr(token), base_url=fake.base_url, poll_timeout=5
        ).model_copy(update=settings)
        adapter = TelegramAdapter(gateway, settings)
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
