"""Recall block: at the end of the system prompt, within its token budget, never stored,
and a failing search leaves the call without memories instead of failing it."""

from __future__ import annotations

import logging

import pytest
from tests.memory.conftest import CountingEmbedder, StoreFactory

from xclaw.context.tokens import EstimateCounter
from xclaw.core.messages import Message
from xclaw.core.state import RunState
from xclaw.memory.base import NewMemory, Scope
from xclaw.memory.embed import UseMultilingualEmbedder
from xclaw.memory.recall import RECALL_HEADING, Recall, latest_request, recall_budget

ALICE = Scope("user", "alice")


def test_budget_is_a_share_of_the_window_with_a_cap() -> None:
    assert recall_budget(128_000, fraction=0.05, cap=1_500) == 1_500
    assert recall_budget(8_000, fraction=0.05, cap=1_500) == 400
    assert recall_budget(None, cap=900) == 900


def test_latest_request_skips_context_notes_and_unwraps_the_task() -> None:
    state = RunState("s", "fix the login bug", [Message.system("sys")])
    state.messages.append(Message.user("Project root: /p\n\nTask:\nfix the login bug"))
    assert latest_request(state) == "fix the login bug"
    state.messages.append(Message.user("and also the logout one"))
    state.messages.append(Message.user("[xclaw context] 3 earlier turns were removed ..."))
    assert latest_request(state) == "and also the logout one"


async def test_block_fits_the_budget_and_leaves_the_transcript(open_sqlite: StoreFactory) -> None:
    store = open_sqlite()
    store.save([NewMemory(f"Python fact number {i}: " + "detail " * 30, ALICE) for i in range(12)])
    recall = Recall(store, [ALICE], max_tokens=200, top_k=12, min_score=0.0)
    state = RunState(
        "s", "python facts", [Message.system("You are xclaw."), Message.user("python facts")]
    )
    await recall.before_model_call(state)
    sent = recall.request_view(state, state.messages)
    block = sent[0].text.removeprefix("You are xclaw.")
    assert RECALL_HEADING in block and 0 < len(state.extra["memory_recall"]["ids"]) < 12
    assert EstimateCounter().count_text(block) <= 200
    assert state.messages[0].text == "You are xclaw."  # the conversation itself is untouched
    bare = recall.request_view(state, [Message.user("python facts")])
    assert bare[0].role == "system" and RECALL_HEADING in bare[0].text


async def test_a_failed_search_is_logged_and_skipped(
    open_sqlite: StoreFactory,
    local_embedder: UseMultilingualEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    open_sqlite().save([NewMemory("Alice likes Rust", ALICE)])
    store = open_sqlite(CountingEmbedder(local_embedder, name="a-new-model"))  # stale vectors
    recall = Recall(store, [ALICE])
    state = RunState("s", "Rust?", [Message.system("sys"), Message.user("Rust?")])
    with caplog.at_level(logging.WARNING, logger="xclaw.memory"):
        await recall.before_model_call(state)
    assert recall.request_view(state, state.messages) is state.messages
    assert "MEMORY_EMBEDDING_MISMATCH" in state.extra["memory_recall"]["error"]
    assert "memory recall skipped" in caplog.text
