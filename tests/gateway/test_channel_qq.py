"""The QQ channel against a fake QQ bot API: a conversation with an approval, the same peer's
/approve only, a split final reply, heartbeats, token refresh, reconnect + resume."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
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


# -- QQ's passive-reply rules: 5 replies per message, within its window ------------------------
SIX = "\n".join(f"part line {i:03d} " + "y" * 40 for i in range(200))  # 6 messages of <= 2000


async def _token(fake: FakeQQ) -> str:
    async with httpx.AsyncClient() as http:
        got = await http.post(
            f"{fake.base}/app/getAppAccessToken", json={"appId": APP_ID, "clientSecret": SECRET}
        )
    return str(got.json()["access_token"])


async def test_the_fake_refuses_what_qq_refuses() -> None:
    """The rules the adapter is held to: a 6th reply, a reply past the window, a proactive
    message, a msg_seq used twice, a msg_id of another user."""
    async with running(FakeQQ(group_window=0.3)) as fake, httpx.AsyncClient() as http:
        auth = {"Authorization": f"QQBot {await _token(fake)}"}
        mid = fake.c2c("erin-openid", "hi")

        async def reply(path: str, **body: object) -> httpx.Response:
            payload = {"content": "x", "msg_type": 0, **body}
            return await http.post(f"{fake.base}{path}", json=payload, headers=auth)

        to_erin = "/v2/users/erin-openid/messages"
        assert [(await reply(to_erin, msg_id=mid, msg_seq=n)).status_code for n in range(1, 6)] == [
            200
        ] * 5
        sixth = await reply(to_erin, msg_id=mid, msg_seq=6)
        assert (sixth.status_code, sixth.json()["code"]) == (400, 22009)
        again = fake.c2c("erin-openid", "again")
        assert (await reply(to_erin, msg_id=again, msg_seq=1)).status_code == 200
        assert (await reply(to_erin, msg_id=again, msg_seq=1)).status_code == 400  # same seq
        assert (await reply("/v2/users/other/messages", msg_id=again, msg_seq=2)).status_code == 400
        assert (await reply(to_erin)).status_code == 400  # proactive: gone since 2025-04-21
        gid = fake.group("group-openid", "m1", "hello")
        await asyncio.sleep(0.4)
        late = await reply("/v2/groups/group-openid/messages", msg_id=gid, msg_seq=1)
        assert late.status_code == 400 and "expired" in late.json()["message"]
    assert len(fake.refused) == 5


async def test_a_six_piece_reply_fits_qq_budget_and_the_rest_follows(root: Path) -> None:
    async with running(FakeQQ()) as fake, qq_bot(root, [SIX], fake) as bot:
        assert len(bot.pieces(SIX)) == 6
        first = fake.c2c("alice-openid", "write a lot")
        got = [await fake.reply() for _ in range(5)]
        assert [(g.msg_id, g.msg_seq) for g in got] == [(first, n) for n in range(1, 6)]
        notice = got[-1].content
        assert "2 more parts" in notice and "/more" in notice
        await asyncio.sleep(0.2)
        assert fake.sent.empty() and fake.refused == []  # no 6th reply was even tried

        # QQ lets a bot answer some events: what waits goes out on the first one
        event = fake.event("C2C_MSG_RECEIVE", "alice-openid")
        rest = [await fake.reply() for _ in range(2)]
        assert [(r.msg_id, r.msg_seq) for r in rest] == [(event, 1), (event, 2)]
        fake.c2c("alice-openid", "/more")
        assert (await fake.reply()).content == "Nothing is waiting."
    assert "".join(g.content for g in [*got[:4], *rest]) == SIX
    assert fake.refused == []


async def test_with_proactive_quota_the_rest_goes_proactively(root: Path) -> None:
    fake = FakeQQ(proactive=4)
    async with running(fake), qq_bot(root, [SIX], fake, proactive=True):
        first = fake.c2c("alice-openid", "write a lot")
        got = [await fake.reply() for _ in range(6)]
    # four replies, then (no notice needed) the 5th part proactively and the 6th as the last reply
    assert [(g.msg_id, g.msg_seq) for g in got] == [
        *((first, n) for n in range(1, 5)),
        (None, None),
        (first, 5),
    ]
    assert "".join(g.content for g in got) == SIX and fake.refused == []


async def test_a_slow_group_turn_says_so_in_time_and_answers_the_next_message(
    root: Path,
) -> None:
    slow: dict[str, object] = {
        "text": "Running it.",
        "tool_calls": [
            {
                "id": "call_1",
                "name": "terminal.exec",
                "arguments": {"program": "sh", "argv": ["-c", "sleep 3; echo slow-done"]},
            }
        ],
    }
    fake = FakeQQ(group_window=2.0)  # QQ: 5 minutes; the adapter stops 0.5 s before
    async with (
        running(fake),
        qq_bot(root, [slow, "It printed slow-done."], fake, group_window=2.0, reply_margin=0.5),
    ):
        fake.group("group-openid", "member-1", "run the slow one")
        ask = await fake.reply()
        match = re.search(r"/approve (\w+)", ask.content)
        assert match is not None
        answer = fake.group("group-openid", "member-1", f"/approve {match.group(1)}")
        still = await fake.reply(wait=5)  # before the window of the answer closes
        assert (still.msg_id, still.msg_seq) == (answer, 1)
        assert "Still working" in still.content and "/more" in still.content
        await asyncio.sleep(3.0)  # the turn ends after the window: nothing is tried
        assert fake.sent.empty() and fake.refused == []

        fake.group("group-openid", "member-2", "/more")  # another member: not theirs
        assert (await fake.reply()).content == "Nothing is waiting."
        more = fake.group("group-openid", "member-1", "/more")
        result = await fake.reply()
        assert (result.msg_id, result.content) == (more, "It printed slow-done.")
    assert fake.refused == []


async def test_a_part_qq_refuses_is_said_not_dropped_silently(root: Path) -> None:
    reply = "Done.\n" + "z" * 1990 + "\nDocs: https://example.com/guide\n"
    async with running(FakeQQ()) as fake, qq_bot(root, [reply], fake):
        first = fake.c2c("alice-openid", "and the link?")
        got = [await fake.reply() for _ in range(2)]
    assert got[0].content.startswith("Done.")
    assert "QQ refused a part of this reply" in got[1].content
    assert "40034028" in got[1].content and (got[1].msg_id, got[1].msg_seq) == (first, 3)
    assert [why for _sent, why in fake.refused] == ["url not allowed in content"]
