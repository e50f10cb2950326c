"""The Feishu channel against a fake Open API: signed and encrypted callbacks, an approval."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_feishu import (
    APP_ID,
    APP_SECRET,
    ENCRYPT_KEY,
    TENANT_TOKEN,
    VERIFICATION_TOKEN,
    FakeFeishu,
    Sent,
    encrypt,
    message_event,
    serve,
    signed_headers,
)
from gateway_support import exec_turn, scripted_gateway
from pydantic import SecretStr

from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.channels.feishu import FeishuAdapter, FeishuSettings
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import create_app
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(30)

MARK = "feishu-ran-7"
EXEC = exec_turn(MARK)
LONG = "\n".join(f"line {i:03d} " + "x" * 60 for i in range(100))  # ~7,000 characters
SECRETS = (APP_SECRET, VERIFICATION_TOKEN, ENCRYPT_KEY, TENANT_TOKEN)


@dataclass
class Rig:
    fake: FakeFeishu
    adapter: FeishuAdapter
    gateway: Gateway
    http: httpx.AsyncClient

    async def post(
        self,
        payload: dict[str, Any],
        *,
        key: str | None = ENCRYPT_KEY,
        encrypted: bool = False,
        timestamp: float | None = None,
    ) -> httpx.Response:
        message = (payload.get("event") or {}).get("message") or {}
        if "message_id" in message:  # Feishu made it: a reply to it is possible
            self.fake.delivered.add(message["message_id"])
        if encrypted:
            payload = {"encrypt": encrypt(ENCRYPT_KEY, json.dumps(payload))}
        body = json.dumps(payload).encode()
        headers = (
            signed_headers(body, key, timestamp=timestamp)
            if key is not None
            else {"Content-Type": "application/json"}
        )
        return await self.http.post(self.adapter.settings.path, content=body, headers=headers)


@asynccontextmanager
async def rig(
    root: Path, script: list[Any], *, encrypt_key: str | None, **extra: Any
) -> AsyncIterator[Rig]:
    store = open_store()

    fake = FakeFeishu(strict=True)
    gateway = scripted_gateway(root, script, store)
    async with serve(fake.app()) as api_url:
        settings = FeishuSettings(
            app_id=APP_ID,
            app_secret=SecretStr(APP_SECRET),
            verification_token=SecretStr(VERIFICATION_TOKEN),
            encrypt_key=SecretStr(encrypt_key) if encrypt_key else None,
            base_url=api_url,
            **extra,
        )
        adapter = FeishuAdapter(gateway, settings)
        await adapter.start()
        # Mounted the way `xclaw serve` mounts channel callbacks: inside the gateway app,
        # before its UI; the platform's signature, not the gateway token, guards them.
        app = create_app(gateway, GatewayAuth("t" * 32), routers=[adapter.router])
        try:
            async with serve(app) as bot_url, httpx.AsyncClient(base_url=bot_url) as http:
                yield Rig(fake, adapter, gateway, http)
        finally:
            await adapter.stop()
            await gateway.close()
            store.close()


def to(sent: list[Sent], target: str) -> list[str]:
    return [s.text for s in sent if s.target == target]


async def test_a_conversation_with_an_approval(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with rig(root, [EXEC, LONG], encrypt_key=ENCRYPT_KEY) as r:
        # the console's URL check, encrypted as Feishu sends it once a key is set
        challenge = {"challenge": "c-123", "token": VERIFICATION_TOKEN, "type": "url_verification"}
        ok = await r.post(challenge, key=None, encrypted=True)
        assert ok.status_code == 200 and ok.json() == {"challenge": "c-123"}
        wrong = await r.post({**challenge, "token": "nope"}, key=None)
        assert wrong.status_code == 401

        # refused callbacks: bad signature, a replay of 10 minutes ago, no signature
        bad = await r.post(message_event("oc_a", "run it"), key="not-the-key")
        stale = await r.post(message_event("oc_a", "run it"), timestamp=time.time() - 600)
        unsigned = await r.post(message_event("oc_a", "run it"), key=None)
        assert [bad.status_code, stale.status_code, unsigned.status_code] == [401, 401, 401]
        assert bad.json() == {"error": 401}
        assert r.fake.sent == [] and r.gateway._live == {}

        # peer A asks (encrypted and signed); Feishu's retry of the same event is dropped
        task = message_event("oc_a", "run it", message_id="om_a1", event_id="ev-1")
        assert (await r.post(task, encrypted=True)).status_code == 200
        assert (await r.post(task, encrypted=True)).status_code == 200
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_a1")))
        approval = to(r.fake.sent, "om_a1")[0]
        assert approval.startswith("Approval needed")
        found = re.search(r"/approve ([0-9a-f]+)", approval)
        assert found is not None
        request_id = found.group(1)

        # the bot's own message and another peer cannot approve
        own = message_event("oc_a", f"/approve {request_id}", sender_type="app")
        assert (await r.post(own)).status_code == 200
        other = message_event("oc_b", f"/approve {request_id}", message_id="om_b1")
        assert (await r.post(other)).status_code == 200
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_b1")))
        assert to(r.fake.sent, "om_b1") == ["Error APPROVAL_UNKNOWN: No such open question here."]
        assert not (root / "out.txt").exists()

        # the same peer approves: the command runs, the long reply comes in pieces
        yes = message_event("oc_a", f"/approve {request_id}", message_id="om_a2")
        assert (await r.post(yes)).status_code == 200
        await r.fake.wait_for(lambda sent: "".join(to(sent, "om_a2")) == LONG)
        pieces = to(r.fake.sent, "om_a2")
        token_calls = r.fake.token_calls

    assert (root / "out.txt").read_text().strip() == MARK
    assert len(pieces) >= 2 and all(len(p) <= 4000 for p in pieces)
    assert len(to(r.fake.sent, "om_a1")) == 1  # one approval: the retried event ran nothing
    assert {s.kind for s in r.fake.sent} == {"reply"}
    assert token_calls == 1  # the tenant token is cached
    assert caplog.text and "refused" in caplog.text
    for secret in SECRETS:
        assert secret not in caplog.text


async def test_token_mode_and_sending_to_a_chat(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with rig(root, ["Hello from xclaw."], encrypt_key=None) as r:
        wrong = await r.post(message_event("oc_c", "hi", token="forged"), key=None)
        assert wrong.status_code == 401
        encrypted = await r.post(message_event("oc_c", "hi"), key=None, encrypted=True)
        assert encrypted.status_code == 400  # no key configured: nothing to decrypt with
        good = await r.post(message_event("oc_c", "hi", message_id="om_c1"), key=None)
        assert good.status_code == 200
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_c1")))
        await r.adapter.send_text("oc_new", "a new message")  # no message to reply to
    assert to(r.fake.sent, "om_c1") == ["Hello from xclaw."]
    assert r.fake.sent[-1] == Sent("send", "oc_new", "a new message")
    for secret in SECRETS:
        assert secret not in caplog.text


# -- groups: one session per chat, approvals bound to the member who asked -----------------
GROUP, ALICE, BOB = "oc_group_7", "ou_alice_0001", "ou_bob_0002"


def approve_id(text: str) -> str:
    found = re.search(r"/approve ([0-9a-f]+)", text)
    assert found is not None, text
    return found.group(1)


async def test_a_group_with_two_members_only_the_asker_approves(root: Path) -> None:
    async with rig(root, [EXEC, "done for alice", "hello bob"], encrypt_key=None) as r:
        chatter = r.fake.group_message(GROUP, BOB, "lunch?", mention_bot=False, message_id="om_0")
        assert (await r.post(chatter, key=None)).status_code == 200  # not for the bot

        asks = r.fake.group_message(GROUP, ALICE, "run it", message_id="om_1")
        assert (await r.post(asks, key=None)).status_code == 200
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_1")))
        prompt = to(r.fake.sent, "om_1")[0]
        assert prompt.startswith(f'<at user_id="{ALICE}"></at> Approval needed')
        assert "only the asker may answer" in prompt
        rid = approve_id(prompt)

        # Bob (no @ needed for a command) cannot approve Alice's command
        bob_yes = r.fake.group_message(GROUP, BOB, f"/approve {rid}", mention_bot=False)
        bob_yes["event"]["message"]["message_id"] = "om_2"
        await r.post(bob_yes, key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_2")))
        assert to(r.fake.sent, "om_2")[0].startswith("Error APPROVAL_NOT_YOURS")
        bob_stop = r.fake.group_message(GROUP, BOB, "/stop", message_id="om_3")
        await r.post(bob_stop, key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_3")))
        assert to(r.fake.sent, "om_3")[0].startswith("Error STOP_NOT_YOURS")
        assert not (root / "out.txt").exists()

        # Bob's own task waits for Alice's turn (one session, one turn at a time)
        bob_task = r.fake.group_message(GROUP, BOB, "say hello", message_id="om_4")
        await r.post(bob_task, key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_4")))
        await asyncio.sleep(0.2)
        assert to(r.fake.sent, "om_4") == ["Queued: this runs after the task running now."]

        alice_yes = r.fake.group_message(GROUP, ALICE, f"/approve {rid}", message_id="om_5")
        await r.post(alice_yes, key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_5")) and len(to(sent, "om_4")) == 2)
        session = r.adapter.session_for(GROUP)
        sessions = {s.id for s in r.gateway.store.list_sessions(root=str(root))}

    assert (root / "out.txt").read_text().strip() == MARK
    assert to(r.fake.sent, "om_5") == ["done for alice"]
    assert to(r.fake.sent, "om_4")[1:] == ["hello bob"]  # the answer to Bob's own message
    assert to(r.fake.sent, "om_0") == []
    assert sessions == {session}  # the group's members share one session
    assert {s.kind for s in r.fake.sent} == {"reply"}
    assert r.fake.bot_info_calls == 1  # the bot's open_id is asked once


async def test_group_scope_sender_gives_each_member_a_session(root: Path) -> None:
    async with rig(root, [EXEC, "done"], encrypt_key=None, group_scope="sender") as r:
        await r.post(r.fake.group_message(GROUP, ALICE, "run it", message_id="om_1"), key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_1")))
        rid = approve_id(to(r.fake.sent, "om_1")[0])
        assert "only the asker" not in to(r.fake.sent, "om_1")[0]  # her own session

        await r.post(
            r.fake.group_message(GROUP, BOB, f"/approve {rid}", message_id="om_2"), key=None
        )
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_2")))
        assert to(r.fake.sent, "om_2") == ["Error APPROVAL_UNKNOWN: No such open question here."]

        await r.post(
            r.fake.group_message(GROUP, ALICE, f"/approve {rid}", message_id="om_3"), key=None
        )
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_3")))
        alice, bob = (
            r.adapter.session_for(f"{GROUP}:{ALICE}"),
            r.adapter.session_for(f"{GROUP}:{BOB}"),
        )
    assert to(r.fake.sent, "om_3") == ["done"]
    assert alice != bob and alice != r.adapter.session_for(GROUP)


async def test_without_the_bots_open_id_any_mention_counts(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with rig(root, ["hi all"], encrypt_key=None) as r:
        r.fake.bot_info_code = 11205  # the bot info call is refused
        no_at = r.fake.group_message(GROUP, ALICE, "hello", mention_bot=False, message_id="om_1")
        await r.post(no_at, key=None)
        assert r.gateway._live == {}
        # without its own open_id the bot cannot tell whom an @ is for: any @ is taken
        at_bob = r.fake.group_message(
            GROUP, ALICE, "hello", mention_bot=False, mention=BOB, message_id="om_2"
        )
        await r.post(at_bob, key=None)
        await r.fake.wait_for(lambda sent: bool(to(sent, "om_2")))
    assert to(r.fake.sent, "om_2") == ["hi all"] and to(r.fake.sent, "om_1") == []
    assert r.fake.bot_info_calls == 2  # asked again each time, until it answers
    assert caplog.text.count("open_id is unknown") == 1


async def test_a_turn_not_started_from_the_group_is_not_answered_there(root: Path) -> None:
    """The owner opens the group's session in the web UI and runs a command there: its
    approval reaches the group too, but no member may answer it, and members' tasks wait."""
    from websockets.asyncio.client import connect

    script = ["hello", EXEC, "web done", "bob's answer"]
    async with rig(root, script, encrypt_key=None) as r:
        await r.post(r.fake.group_message(GROUP, ALICE, "hi", message_id="om_1"), key=None)
        await r.fake.wait_for(lambda sent: to(sent, "om_1") == ["hello"])
        sid = r.adapter.session_for(GROUP)
        ws_url = str(r.http.base_url).replace("http", "ws", 1) + f"/ws?session={sid}"
        async with connect(
            ws_url, additional_headers={"Authorization": "Bearer " + "t" * 32}
        ) as ws:
            assert json.loads(await ws.recv())["type"] == "session"
            await ws.send(json.dumps({"type": "message", "content": "run it", "sessionId": sid}))
            while (frame := json.loads(await ws.recv()))["type"] != "approval.request":
                pass
            rid = frame["requestId"]
            await r.fake.wait_for(lambda sent: any(rid in s.text for s in sent))
            yes = r.fake.group_message(GROUP, ALICE, f"/approve {rid}", message_id="om_2")
            await r.post(yes, key=None)
            await r.fake.wait_for(lambda sent: bool(to(sent, "om_2")))
            assert "it was not asked from this chat" in to(r.fake.sent, "om_2")[0]
            assert not (root / "out.txt").exists()

            bob = r.fake.group_message(GROUP, BOB, "your turn", message_id="om_3")
            await r.post(bob, key=None)
            await r.fake.wait_for(lambda sent: bool(to(sent, "om_3")))
            assert to(r.fake.sent, "om_3") == ["Queued: this runs after the task running now."]

            answer = {"type": "approval.response", "requestId": rid, "answer": "once"}
            await ws.send(json.dumps(answer))  # the web UI answers its own question
            while (frame := json.loads(await ws.recv()))["type"] != "reply":
                pass
            assert frame["text"] == "web done"
            await r.fake.wait_for(lambda sent: len(to(sent, "om_3")) == 2)
    assert (root / "out.txt").read_text().strip() == MARK
    assert to(r.fake.sent, "om_3")[1] == "bob's answer"
