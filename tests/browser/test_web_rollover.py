"""A page conversation that grows past its size continues in a new one, on the real page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixture_server import FixtureSite
from web_support import needs_browser

from xclaw.coding.agent import Agent
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply

pytestmark = [needs_browser, pytest.mark.asyncio(loop_scope="module")]


def _write(name: str) -> str:
    return render_reply(False, "", "fs.write", {"path": name, "content": "x" * 300})


async def test_a_long_chat_continues_in_a_new_conversation_with_a_summary(
    site: FixtureSite, make_transport: Any, root: Path
) -> None:
    site.queue(_write("a.txt"), _write("b.txt"), render_reply(True, "Wrote a.txt and b.txt."))
    transport = make_transport()
    model = TextProtocolModel(transport, max_conversation_chars=6_000)
    result = await Agent(model, root, evidence_gate_enabled=False).run("write a.txt and b.txt")
    assert result.status == "completed", result.reason
    assert model.conversations_started >= 1
    texts = [p["text"] for p in site.posted]
    conversations = [p["conversation_id"] for p in site.posted]
    restart = next(i for i, c in enumerate(conversations) if c != conversations[0])
    assert texts[restart].startswith("<agent_protocol>") and "Steps taken so far:" in texts[restart]
    assert transport.conversation_url and conversations[-1] in transport.conversation_url
