"""The canonical transcript holds the conversation, never the transport (seed 000 §9.1)."""

from __future__ import annotations

import json
from pathlib import Path

from xclaw import Agent
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport
from xclaw.store.open import open_store

PROTOCOL_MARKERS = (
    "<agent_response",
    "<agent_protocol",
    "<tool_result",
    "<system_reminder",
    "<tool_call",
    "<xclaw_call",
)


async def test_xml_transport_never_reaches_the_transcript(
    backend: str, root: Path, tmp_path: Path
) -> None:
    replies = [
        "<agent_response><done>false</done>",  # malformed: asked to resend
        render_reply(False, "Writing a.txt.", "fs.write", {"path": "a.txt", "content": "hi"}),
        render_reply(True, "Wrote a.txt."),
    ]
    transport = ScriptedTransport(replies)
    store = open_store(None if backend == "postgres" else tmp_path / "x.db")
    agent = Agent(TextProtocolModel(transport), root, store=store, evidence_gate_enabled=False)
    result = await agent.run("write a.txt")
    assert result.ok and (root / "a.txt").read_text() == "hi"
    # The model really was sent protocol text, and was asked once to resend ...
    assert any("<agent_protocol" in sent for sent in transport.sent)
    assert sum("<system_reminder" in sent for sent in transport.sent) == len(transport.sent)
    # ... but the transcript holds only the conversation.
    items = store.load_items(result.session_id)
    text = json.dumps([i.payload for i in items])
    assert not any(marker in text for marker in PROTOCOL_MARKERS), text
    kinds = [i.payload["type"] for i in items]
    assert kinds.count("function_call") == 1 and kinds.count("function_call_output") == 1
    protocol_steps = [s for s in store.list_steps(result.session_id) if s.name == "protocol"]
    assert len(protocol_steps) == 2  # the malformed reply and the request to resend
    store.close()
