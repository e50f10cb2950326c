"""The QQ channel against a fake QQ bot API: a conversation with an approval, the same peer's
/approve only, a split final reply, heartbeats, token refresh, reconnect + resume."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fake_qq import APP_ID, SECRET, FakeQQ, running
from gateway_support import exec_turn, scripted_gateway
from pydantic import SecretStr

from xclaw.gateway.channels.qq import QQAdapter, QQSettings
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(30)

MARK = "qq-ran-42"
EXEC = exec_turn(MARK)
LONG = "\n".join(f"line {i:03d} " + "x" * 40 for i in range(100))  # 5000 chars: 3 messages


@asynccontextmanager
async def qq_bot(
    root: Path, script: list[dict[str, object] | str], fake: FakeQQ, **extra: object
) -> AsyncIterator[QQAdapter]:
    store = open_store()

    gateway = scripted_gateway(root, script, store)
    fields: dict[str, object] = {
        "app_id": APP_ID,
        "client_secret": SecretStr(SECRET),
        "api_base": fake.base,
        "token_url": f"{fake.base}/app/getAppAccessToken",
        "reconnect_delay": 0.05,
    }
    settings = QQSettings.model_validate(fields | extra)
    adapter = QQAdapter(gateway, settings)
    await adapter.start()
    try:
        if settings.client_secret.get_secret_value() == SECRET:
            await asyncio.wait_for(adapter.ready.wait(), 5)
        yield adapter
    finally:
        await adapter.stop()
        await gateway.close()
        store.close()


async def test_a_conversation_with_an_approval(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running(FakeQQ()) as fake, qq_bot(root, [EXEC, LONG], fake):
        first = fake.c2c("alice-openid", "please run it")
        ask = await fake.reply()
        assert (ask.kind, ask.openid, ask.msg_id, ask.msg_seq) == ("c2c", "alice-openid", first, 1)
        assert "Approval needed" in ask.content
        match = re.search(r"/approve (\w+)", ask.content)
        assert match is not None
        request_id = match.group(1)

        fake.c2c("mallory-openid", f"/approve {request_id}")  # another peer: refused
        refused = await fake.reply()
        assert refused.openid == "mallory-openid"
        assert "No such open question" in refused.content
        assert not (root / "out.txt").exists()

        answer = fake.c2c("alice-openid", f"/approve {request_id}")
        pieces = [await fake.reply() for _ in range(3)]
        await asyncio.sleep(0.3)  # a few heartbeats
    assert (root / "out.txt").read_text().strip() == MARK
    assert all(p.openid == "alice-openid" and len(p.content) <= 2000 for p in pieces)
    assert "".join(p.content for p in pieces) == LONG
    assert [(p.msg_id, p.msg_seq) for p in pieces] == [(answer, 1), (answer, 2), (answer, 3)]
    assert fake.sent.empty()
    identify = fake.greetings[0]
    assert identify["op"] == 2 and identify["d"]["intents"] & (1 << 25)
    assert identify["d"]["token"] == f"QQBot {fake.tokens[-1]}"
    assert fake.heartbeats and fake.heartbeats[-1] == 3  # the last sequence seen
    for secret in [SECRET, *fake.tokens]:
        assert secret not in caplog.text


async def test_reconnect_resumes_and_a_group_peer_is_answered(root: Path) -> None:
    fake = FakeQQ(expires_in=30)  # under the refresh margin: every use renews the token
    async with running(fake), qq_bot(root, ["hello group", "after invalid"], fake) as bot:
        session = bot.session_id
        fake.c2c("bob-openid", "/approve nothing")
        assert "No such open question" in (await fake.reply()).content

        fake.kick(7)  # Reconnect: the bot comes back with op 6 Resume
        await asyncio.wait_for(fake.connected.wait(), 5)
        resume = fake.greetings[-1]
        assert resume["op"] == 6
        assert resume["d"]["session_id"] == session and resume["d"]["seq"] == 1
        assert resume["d"]["token"] == f"QQBot {fake.tokens[-1]}"

        mid = fake.group("group-openid", "member-1", "say hello")
        sent = await fake.reply()
        assert (sent.kind, sent.openid, sent.content) == ("group", "group-openid", "hello group")
        assert (sent.msg_id, sent.msg_seq) == (mid, 1)

        fake.kick(9, False)  # Invalid Session: a fresh Identify and a new session
        await asyncio.wait_for(fake.connected.wait(), 5)
        assert fake.greetings[-1]["op"] == 2
        await asyncio.wait_for(bot.ready.wait(), 5)
        assert bot.session_id not in (None, session)
        fake.group("group-openid", "member-1", "again")
        assert (await fake.reply()).content == "after invalid"
    assert len(fake.tokens) > 2  # renewed before expiry


async def test_a_message_sent_while_disconnected_is_replayed_on_resume(root: Path) -> None:
    async with running(FakeQQ()) as fake, qq_bot(root, ["caught up"], fake) as bot:
        fake.kick(7)
        await asyncio.sleep(0)  # the link is down or going down
        fake.c2c("carol-openid", "are you there?")
        sent = await fake.reply()
        assert (sent.openid, sent.content) == ("carol-openid", "caught up")
        assert bot.seq == 1


async def test_in_a_group_only_the_asking_member_approves(root: Path) -> None:
    async with running(FakeQQ()) as fake, qq_bot(root, [EXEC, "done"], fake):
        fake.group("group-openid", "member-1", "please run it")
        ask = await fake.reply()
        assert (ask.kind, ask.openid) == ("group", "group-openid")
        match = re.search(r"/approve (\w+)", ask.content)
        assert match is not None
        fake.group("group-openid", "member-2", f"/approve {match.group(1)}")
        assert "No such open question" in (await fake.reply()).content
        assert not (root / "out.txt").exists()
        fake.group("group-openid", "member-1", f"/approve {match.group(1)}")
        assert (await fake.reply()).content == "done"
    assert (root / "out.txt").read_text().strip() == MARK


async def test_group_scope_group_is_one_shared_conversation(root: Path) -> None:
    async with (
        running(FakeQQ()) as fake,
        qq_bot(root, ["one", "two"], fake, group_scope="group") as bot,
    ):
        fake.group("group-openid", "member-1", "first")
        assert (await fake.reply()).content == "one"
        fake.group("group-openid", "member-2", "second")
        assert (await fake.reply()).content == "two"  # the same session went on
        assert bot.session_for("group-openid") in bot.gateway._live


async def test_unanswered_heartbeats_reconnect_and_resume(root: Path) -> None:
    fake = FakeQQ(ack=False)
    async with running(fake), qq_bot(root, ["still here"], fake):
        fake.connected.clear()
        await asyncio.wait_for(fake.connected.wait(), 5)
        assert fake.greetings[-1]["op"] == 6
        fake.ack = True
        fake.c2c("dave-openid", "ping")
        assert (await fake.reply()).content == "still here"


async def test_a_wrong_secret_logs_no_secret(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-secret-3b2a1c"
    async with running(FakeQQ()) as fake, qq_bot(root, [], fake, client_secret=SecretStr(wrong)):
        await asyncio.sleep(0.3)
        assert not fake.tokens and not fake.greetings
    assert "gateway connection failed" in caplog.text
    assert wrong not in caplog.text and SECRET not in caplog.text
