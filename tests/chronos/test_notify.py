"""Notify targets over real HTTP, retries with backoff, dead letters, the safe template."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from chronos_support import BOT_SECRET, FakeFeishuBot, jsonl, serve_app

from xclaw.chronos.notify import (
    ChannelTarget,
    DeadLetterLog,
    FeishuBotTarget,
    Notice,
    Notifier,
    StdoutTarget,
)
from xclaw.chronos.template import render, render_task
from xclaw.gateway.server import GatewayServer

NOTICE = Notice("Disk full", "/ at 97%", "CRITICAL", "disk", "chronos-disk-1")


@pytest.fixture
def bot() -> Iterator[tuple[FakeFeishuBot, GatewayServer]]:
    fake = FakeFeishuBot()
    server = serve_app(fake.app())
    try:
        yield fake, server
    finally:
        server.stop()


def _notifier(tmp_path: Path, *targets: object, attempts: int = 4) -> tuple[Notifier, list[float]]:
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    notifier = Notifier(
        {t.name: t for t in targets},  # type: ignore[attr-defined]
        DeadLetterLog(tmp_path / "dead.jsonl"),
        attempts=attempts,
        backoff_s=0.5,
        max_backoff_s=1.5,
        sleep=sleep,
    )
    return notifier, waits


async def test_feishu_bot_gets_a_signed_message_after_transient_failures(
    tmp_path: Path, bot: tuple[FakeFeishuBot, GatewayServer]
) -> None:
    fake, server = bot
    fake.fail_first = 3
    async with httpx.AsyncClient() as client:
        url = f"{server.url}/open-apis/bot/v2/hook/tok-123456"
        target = FeishuBotTarget("team", url, BOT_SECRET, client)
        notifier, waits = _notifier(tmp_path, target, attempts=5)
        receipt = await notifier.notify("team", NOTICE)
    assert (receipt.ok, receipt.attempts) == (True, 4)
    assert waits == [0.5, 1.0, 1.5]  # doubling, capped at max_backoff_s
    assert fake.texts == ["[CRITICAL] Disk full\n/ at 97%\n(disk chronos-disk-1)"]
    assert not (tmp_path / "dead.jsonl").exists()


async def test_a_refused_signature_is_not_retried_and_is_dead_lettered(
    tmp_path: Path, bot: tuple[FakeFeishuBot, GatewayServer]
) -> None:
    fake, server = bot
    async with httpx.AsyncClient() as client:
        url = f"{server.url}/open-apis/bot/v2/hook/tok-abcdef-secret"
        target = FeishuBotTarget("team", url, "wrong-secret-000000", client)
        notifier, waits = _notifier(tmp_path, target)
        receipt = await notifier.notify("team", NOTICE)
    assert (receipt.ok, receipt.attempts, waits) == (False, 1, [])
    assert "19021" in receipt.error and fake.refusals == 1
    [dead] = jsonl(tmp_path / "dead.jsonl")
    assert (dead["target"], dead["level"], dead["session_id"]) == (
        "team",
        "CRITICAL",
        NOTICE.session_id,
    )
    text = (tmp_path / "dead.jsonl").read_text()
    assert "tok-abcdef-secret" not in text and "wrong-secret" not in text


async def test_an_unreachable_target_retries_up_to_the_bound(tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client:
        target = FeishuBotTarget("team", "http://127.0.0.1:9/hook", None, client)
        notifier, waits = _notifier(tmp_path, target, attempts=3)
        receipt = await notifier.notify("team", NOTICE)
    assert (receipt.ok, receipt.attempts, waits) == (False, 3, [0.5, 1.0])
    assert len(jsonl(tmp_path / "dead.jsonl")) == 1


async def test_channel_and_stdout_targets(tmp_path: Path) -> None:
    class Sender:
        limit = 20

        def __init__(self) -> None:
            self.sent: list[tuple[str, str]] = []

        async def send_text(self, peer: str, text: str) -> None:
            self.sent.append((peer, text))

    sender = Sender()
    out = io.StringIO()
    notifier, _ = _notifier(tmp_path, ChannelTarget("chat", sender, "oc_1"), StdoutTarget("o", out))
    assert (await notifier.notify("chat", NOTICE)).ok
    assert sender.sent == [("oc_1", "[CRITICAL] Disk full")]  # cut to the platform limit
    assert (await notifier.notify("o", NOTICE)).ok and "Disk full" in out.getvalue()
    missing = await notifier.notify("nope", NOTICE)
    assert not missing.ok and "no notify target" in missing.error


def test_dead_letters_are_whole_lines_under_concurrent_writers(tmp_path: Path) -> None:
    import threading

    log = DeadLetterLog(tmp_path / "dead.jsonl")
    big = "x" * 70_000  # far above PIPE_BUF: only one write per line keeps lines whole

    def write(n: int) -> None:
        for i in range(10):
            log.append({"writer": n, "i": i, "pad": big})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = jsonl(tmp_path / "dead.jsonl")  # every line parses
    assert len(items) == 40 and {len(i["pad"]) for i in items} == {70_000}


def test_templates_fill_paths_and_nothing_else() -> None:
    data = {"payload": {"a": {"b": [1, {"c": "deep"}]}, "__class__": "x"}}
    assert render("{{payload.a.b.1.c}} {{payload.a.b.0}} {{payload.none}}|", data) == "deep 1 |"
    assert render("{{ payload.a.b }}", data) == '[1, {"c": "deep"}]'
    assert render("{payload} {{payload.a.__init__}} {{1+1}}", data) == "{payload}  {{1+1}}"
    task = render_task("Look at {{payload.a.b.1.c}}.", data)
    assert task.startswith("Look at <untrusted-data>deep</untrusted-data>.")
    assert render_task("No fields.", data) == "No fields."


async def test_a_gateway_chat_channel_target_posts_through_the_platform_api(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import SecretStr

    from xclaw.gateway.channels.feishu import FeishuAdapter, FeishuSettings
    from xclaw.gateway.gateway import Gateway
    from xclaw.store.sqlite import SqliteStore

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "gateway"))
    import fake_feishu  # the gateway tests' fake Feishu Open API

    fake = fake_feishu.FakeFeishu()
    store = SqliteStore(tmp_path / "x.db")
    gateway = Gateway(lambda *_a: None, store, workdir=root)  # type: ignore[arg-type,return-value]
    async with fake_feishu.serve(fake.app()) as url:
        settings = FeishuSettings(
            app_id=fake_feishu.APP_ID,
            app_secret=SecretStr(fake_feishu.APP_SECRET),
            verification_token=SecretStr(fake_feishu.VERIFICATION_TOKEN),
            base_url=url,
        )
        adapter = FeishuAdapter(gateway, settings)
        await adapter.start()
        try:
            notifier, _ = _notifier(tmp_path, ChannelTarget("chat", adapter, "oc_team"))
            receipt = await notifier.notify("chat", NOTICE)
        finally:
            await adapter.stop()
    assert receipt.ok
    assert [(s.kind, s.target) for s in fake.sent] == [("send", "oc_team")]
    assert fake.sent[0].text.startswith("[CRITICAL] Disk full")
    await gateway.close()
