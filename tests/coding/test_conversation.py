"""A web conversation's URL travels with the session and is reopened on resume."""

from __future__ import annotations

from pathlib import Path

from xclaw.coding.agent import Agent
from xclaw.coding.conversation import META_KEY, reopen_conversation, web_model
from xclaw.core.errors import ModelError
from xclaw.core.limits import Limits
from xclaw.models.fallback import FallbackModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport
from xclaw.store.sqlite import open_store


class _Page(ScriptedTransport):
    """A scripted chat with a URL per conversation, like the web transport."""

    def __init__(self, replies: list[str], *, gone: bool = False) -> None:
        super().__init__(replies)
        self.conversation_url: str | None = None
        self.opened_urls: list[str] = []
        self.gone = gone

    async def send(self, text: str) -> str:
        self.conversation_url = self.conversation_url or "http://127.0.0.1:9/c/abc123"
        return await super().send(text)

    async def open_conversation(self, url: str) -> None:
        if self.gone:
            raise ModelError("That conversation no longer exists.", code="WEB_CONVERSATION_GONE")
        self.opened_urls.append(url)
        self.conversation_url = url


def _write(name: str) -> str:
    return render_reply(False, "", "fs.write", {"path": name, "content": "x"})


async def test_the_url_is_saved_and_a_resume_reopens_it(root: Path, tmp_path: Path) -> None:
    with open_store(tmp_path / "x.db") as store:
        first = _Page([_write("a.txt"), _write("b.txt")])
        agent = Agent(
            TextProtocolModel(first),
            root,
            store=store,
            limits=Limits(max_turns=2),
            evidence_gate_enabled=False,
        )
        stopped = await agent.run("write a.txt and b.txt")
        assert stopped.status == "interrupted"
        session = store.get_session(stopped.session_id)
        assert session is not None and session.meta[META_KEY] == "http://127.0.0.1:9/c/abc123"

        again = _Page([render_reply(True, "Done: a.txt and b.txt written.")])
        model = TextProtocolModel(again)
        resumed = Agent(model, root, store=store, evidence_gate_enabled=False)
        result = await resumed.resume(stopped.session_id)
        assert result.status == "completed", result.reason
        assert again.opened_urls == ["http://127.0.0.1:9/c/abc123"]
        # The reopened chat already holds the protocol: only the new input is sent.
        assert not again.sent[0].startswith("<agent_protocol>")


async def test_a_conversation_that_is_gone_restarts_with_a_summary() -> None:
    page = _Page([], gone=True)
    model = TextProtocolModel(page)
    note = await reopen_conversation(model, {META_KEY: "http://127.0.0.1:9/c/old"})
    assert note is not None and "WEB_CONVERSATION_GONE" in note and model.opened is False


async def test_a_chain_is_looked_through_and_other_models_are_left_alone() -> None:
    web = TextProtocolModel(_Page([]))
    assert web_model(FallbackModel([web])) is web
    assert web_model(TextProtocolModel(ScriptedTransport([]))) is None
    assert await reopen_conversation(TextProtocolModel(ScriptedTransport([])), {}) is None
