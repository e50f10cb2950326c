"""Conversation identity comes from the request: each client's history picks its own chat.

In process, the chat-holding model is wrapped the way ``resolve_model`` wraps every model (a
``FallbackModel``) over ``ChatPages``, a transport with several chats. The acceptance test
starts ``xclaw bridge --model chatgpt-web`` as a real process on the fixture page in headless
Chromium and runs two official ``openai`` clients at once; what the page received is the
evidence that their conversations never meet.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from bridge_support import ChatPages, browser_env, serving, start_cli_bridge
from fixture_server import FixtureSite
from web_support import needs_browser

from xclaw.bridge.chats import ChatBook, chat_holders
from xclaw.bridge.params import honoured_settings
from xclaw.bridge.served import MAX_RESENDS
from xclaw.core.model import Model
from xclaw.models.fallback import FallbackModel
from xclaw.models.resolve import resolve_model
from xclaw.models.scripted import ScriptedModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply

PROTOCOL_END = "</agent_protocol>"
_TOOL = re.compile(r"^## ([A-Za-z0-9_.-]+) \(external\)", re.M)
_MARK = re.compile(r"\b(?:ALPHA|BRAVO|CHARLIE)-[A-Z0-9]+\b")


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Look something up ({name}).",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }


def page_answer(text: str) -> str:
    """The model on the page: a new chat with tools calls the first one, a tool result or a
    follow-up is answered; every answer quotes the client markers it was shown."""
    marks = " ".join(sorted(set(_MARK.findall(text))))
    if "<tool_result name=" in text:
        return render_reply(True, f"Done with {marks}.")
    tools = _TOOL.findall(text)
    if tools and PROTOCOL_END in text and "Steps taken so far" not in text:
        return render_reply(False, "Looking.", tools[0], {"q": marks})
    return render_reply(True, f"Noted {marks}.")


class PageScript:
    """``page_answer`` for the fixture site (it calls ``send`` with each posted message)."""

    async def send(self, text: str) -> str:
        return page_answer(text)


@dataclass
class Client:
    """One OpenAI client's conversation: ask, answer its tool call, follow up."""

    openai: openai.AsyncOpenAI
    mark: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)
    usage: list[Any] = field(default_factory=list)

    async def step(self, n: int, model: str = "web") -> None:
        if n == 0:
            self.messages.append({"role": "user", "content": f"Find {self.mark}, please."})
        elif n == 1:
            (call,) = self.answers[-1].tool_calls or []
            result = f"{self.mark} is in aisle 7"
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        else:
            self.messages.append({"role": "user", "content": f"And later, {self.mark}?"})
        reply = await self.openai.chat.completions.create(
            model=model, messages=self.messages, tools=self.tools
        )
        message = reply.choices[0].message
        self.answers.append(message)
        self.usage.append(reply.usage)
        self.messages.append(message.model_dump(exclude_none=True))


def chained(pages: ChatPages) -> Model:
    """As the CLI builds it: ``resolve_model`` wraps every model in a ``FallbackModel``."""
    return FallbackModel([TextProtocolModel(pages, name="pages")])


def first_message(pages: ChatPages, url: str) -> str:
    return pages.chats[url][0]


# -- in process ---------------------------------------------------------------------------------


def test_chat_holders_are_found_through_wrappers() -> None:
    inner = TextProtocolModel(ChatPages(lambda url, text: ""))
    assert chat_holders(inner) == [inner]
    assert chat_holders(FallbackModel([ScriptedModel([]), inner])) == [inner]
    assert chat_holders(FallbackModel([FallbackModel([inner])])) == [inner]
    assert chat_holders(ScriptedModel([])) == []


async def test_what_resolve_model_builds_exposes_its_chat_and_its_settings() -> None:
    """The models ``xclaw bridge`` serves come from ``resolve_model``, wrapped as it wraps."""
    web = resolve_model("chatgpt-web", base_url="http://127.0.0.1:9/")
    api = resolve_model("deepseek:deepseek-chat", env={"DEEPSEEK_API_KEY": "k"})
    try:
        (holder,) = chat_holders(web)
        assert isinstance(holder, TextProtocolModel) and holder is not web
        assert honoured_settings(web) == {"parallel_tool_calls"}
        assert chat_holders(api) == [] and {"temperature", "seed"} <= honoured_settings(api)
    finally:
        await web.aclose()
        await api.aclose()


async def test_interleaved_clients_keep_their_own_chats_through_a_fallback_chain() -> None:
    pages = ChatPages(lambda url, text: page_answer(text))
    async with serving({"web": chained(pages)}) as bridge:
        alpha = Client(bridge.client, "ALPHA-1", [tool("alpha_lookup")])
        bravo = Client(bridge.client, "BRAVO-2", [tool("bravo_lookup")])
        for n in range(3):
            await asyncio.gather(alpha.step(n), bravo.step(n))
        book = bridge.app.state.served["web"].chats
    assert isinstance(book, ChatBook) and book.chats_started == 2
    (alpha_chat,) = pages.chat_of("ALPHA-1")
    (bravo_chat,) = pages.chat_of("BRAVO-2")
    assert alpha_chat != bravo_chat and len(pages.chats) == 2
    for chat, own, other in ((alpha_chat, "alpha", "bravo"), (bravo_chat, "bravo", "alpha")):
        opening, *later = pages.chats[chat]
        assert PROTOCOL_END in opening and f"## {own}_lookup" in opening
        assert other.upper() not in opening and f"{other}_lookup" not in opening
        assert len(later) == 2 and all(PROTOCOL_END not in text for text in later)
    assert len(pages.opened) >= 2  # each round, at least one client came back to its chat
    assert alpha.answers[-1].content == "Noted ALPHA-1."
    assert bravo.answers[1].content == "Done with BRAVO-2."


async def test_a_rewritten_history_starts_a_new_chat_with_the_steps() -> None:
    pages = ChatPages(lambda url, text: page_answer(text))
    async with serving({"web": chained(pages)}) as bridge:
        alpha = Client(bridge.client, "ALPHA-1", [tool("alpha_lookup")])
        await alpha.step(0)
        await alpha.step(1)
        alpha.messages[0] = {"role": "user", "content": "Find ALPHA-9 instead."}  # edited
        await alpha.step(2)
    first, second = pages.chats
    assert len(pages.chats[first]) == 2
    (reopening,) = pages.chats[second]
    assert PROTOCOL_END in reopening and "Steps taken so far" in reopening
    assert "ALPHA-9" in reopening and "alpha_lookup" in reopening


async def test_a_changed_tool_list_is_announced_in_a_new_chat() -> None:
    pages = ChatPages(lambda url, text: page_answer(text))
    async with serving({"web": chained(pages)}) as bridge:
        alpha = Client(bridge.client, "ALPHA-1", [tool("alpha_lookup")])
        await alpha.step(0)
        await alpha.step(1)
        alpha.tools = [tool("alpha_lookup"), tool("alpha_order")]
        await alpha.step(2)
    first, second = pages.chats
    assert "alpha_order" not in first_message(pages, first)
    assert "## alpha_order (external)" in first_message(pages, second)


async def test_a_chat_gone_from_the_page_is_replaced_by_one_with_the_steps() -> None:
    pages = ChatPages(lambda url, text: page_answer(text))
    async with serving({"web": chained(pages)}) as bridge:
        alpha = Client(bridge.client, "ALPHA-1", [tool("alpha_lookup")])
        bravo = Client(bridge.client, "BRAVO-2", [tool("bravo_lookup")])
        await alpha.step(0)
        await bravo.step(0)  # the page now shows bravo's chat
        pages.gone.update(pages.chat_of("ALPHA-1"))
        await alpha.step(1)
    assert len(pages.chat_of("ALPHA-1")) == 2 and len(pages.chat_of("BRAVO-2")) == 1
    new_chat = pages.chat_of("ALPHA-1")[1]
    (message,) = pages.chats[new_chat]
    assert PROTOCOL_END in message and "Steps taken so far" in message
    assert alpha.answers[-1].content == "Done with ALPHA-1."


async def test_identical_histories_never_continue_in_each_others_chat() -> None:
    pages = ChatPages(lambda url, text: page_answer(text))
    hello = [{"role": "user", "content": "Hello"}]
    async with serving({"web": chained(pages)}) as bridge:
        first = await bridge.client.chat.completions.create(model="web", messages=hello)
        second = await bridge.client.chat.completions.create(model="web", messages=hello)
        answer = first.choices[0].message.model_dump(exclude_none=True)
        assert answer == second.choices[0].message.model_dump(exclude_none=True)
        follow = [*hello, answer, {"role": "user", "content": "CHARLIE-3 here"}]
        await bridge.client.chat.completions.create(model="web", messages=follow)
    assert len(pages.chats) == 3  # the follow-up could be either client's: a chat of its own
    (charlie,) = pages.chat_of("CHARLIE-3")
    assert PROTOCOL_END in first_message(pages, charlie)


async def test_after_a_failed_turn_the_next_request_starts_a_new_chat() -> None:
    broken = {"left": 0}

    def answer(url: str, text: str) -> str:
        if broken["left"] > 0:
            broken["left"] -= 1
            return "not the protocol"
        return page_answer(text)

    pages = ChatPages(answer)
    async with serving({"web": chained(pages)}) as bridge:
        alpha = Client(bridge.client, "ALPHA-1", [tool("alpha_lookup")])
        await alpha.step(0)
        follow = [*alpha.messages, {"role": "user", "content": "BRAVO-5 now"}]
        broken["left"] = MAX_RESENDS + 1  # every attempt of the next turn is unreadable
        ask = {"model": "web", "messages": follow, "tools": alpha.tools}
        with pytest.raises(openai.InternalServerError):
            await bridge.client.chat.completions.create(**ask)
        again = await bridge.client.chat.completions.create(**ask)
    assert "BRAVO-5" in (again.choices[0].message.content or "")
    first, second = pages.chats
    assert len(pages.chats[first]) == 1 + MAX_RESENDS + 1
    (reopening,) = pages.chats[second]
    assert PROTOCOL_END in reopening and "BRAVO-5" in reopening


# -- the CLI bridge on the fixture page, two clients at once ----------------------------------


@needs_browser
async def test_two_openai_clients_on_one_cli_bridge_never_meet(
    either_site: FixtureSite, tmp_path: Path
) -> None:
    site = either_site  # the 2025 and the 2026 page
    site.use_script(PageScript())  # type: ignore[arg-type]
    args = ["--model", "web=chatgpt-web", "--base-url", site.url, "--headless"]
    bridge = start_cli_bridge(args, tmp_path, env=browser_env(headless=False))
    try:
        async with bridge.async_client() as one, bridge.async_client() as two:
            alpha = Client(one, "ALPHA-7", [tool("alpha_lookup")])
            bravo = Client(two, "BRAVO-8", [tool("bravo_lookup")])
            for n in range(3):
                await asyncio.gather(alpha.step(n), bravo.step(n))
    finally:
        log = bridge.stop()
    posted = site.posted
    by_chat: dict[str, list[str]] = defaultdict(list)
    for post in posted:
        by_chat[post["conversation_id"]].append(post["text"])
    chats_of = {
        mark: {cid for cid, texts in by_chat.items() if any(mark in t for t in texts)}
        for mark in ("ALPHA-7", "BRAVO-8")
    }
    assert all(len(ids) == 1 for ids in chats_of.values()), (chats_of, log)
    assert chats_of["ALPHA-7"].isdisjoint(chats_of["BRAVO-8"])
    for cid, texts in by_chat.items():
        seen = {m for m in ("ALPHA", "BRAVO") if any(m in t for t in texts)}
        assert len(seen) == 1, f"conversation {cid} received both clients: {json.dumps(texts)}"
    for mark, own, other in (("ALPHA-7", "alpha", "bravo"), ("BRAVO-8", "bravo", "alpha")):
        (cid,) = chats_of[mark]
        opening, *later = by_chat[cid]
        assert PROTOCOL_END in opening and f"## {own}_lookup" in opening
        assert f"{other}_lookup" not in opening
        assert later and all(PROTOCOL_END not in text for text in later)  # continued, reopened
    assert alpha.answers[1].content == "Done with ALPHA-7."
    assert bravo.answers[2].content == "Noted BRAVO-8."
    usage = alpha.usage[-1]  # the page reports none: estimated
    assert usage is not None and usage.prompt_tokens > 0 and usage.completion_tokens > 0
