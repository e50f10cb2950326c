"""Recall block: at the end of the system prompt, within its token budget, never stored,
and a failing search leaves the call without memories instead of failing it."""

from __future__ import annotations

import logging

import pytest
from tests.memory.conftest import CountingEmbedder, StoreFactory

from xclaw.context.tokens import EstimateCounter
from xclaw.core.messages import Message
from xclaw.core.state import RunState
from xclaw.memory.base import Hit, MemoryItem, NewMemory, Scope
from xclaw.memory.embed import UseMultilingualEmbedder
from xclaw.memory.recall import (
    RECALL_HEADING,
    Recall,
    RecallLimits,
    latest_request,
    recall_budget,
    select_by_rank,
)
from xclaw.memory.runtime import recall_limits
from xclaw.memory.settings import RecallConfig

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
    limits = RecallLimits(top_k=12, min_similarity=0.0)
    recall = Recall(store, [ALICE], max_tokens=200, limits=limits)
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


def _hit(id_: str, score: float, vector: float | None) -> Hit:
    item = MemoryItem(id_, f"text {id_}", ALICE, "fact", None, {}, 0.0, "m", 3)
    return Hit(item, score, vector, None)


def test_selection_keeps_the_store_rank_and_floors_the_vector_score() -> None:
    hits = [_hit("a", 0.9, 0.05), _hit("b", 0.5, 0.40), _hit("c", 0.4, None), _hit("d", 0.3, 0.2)]
    assert [h.item.id for h in select_by_rank(hits, 0.15, 5)] == ["b", "d"]
    assert [h.item.id for h in select_by_rank(hits, 0.15, 1)] == ["b"]
    assert [h.item.id for h in select_by_rank(hits, 0.0, 5, exclude=["b"])] == ["a", "d"]


def test_limits_come_from_the_config() -> None:
    section = RecallConfig(top_k=7)
    limits = recall_limits(section)
    assert limits.top_k == 7 and limits == RecallLimits(top_k=7)


async def test_without_always_considered_preferences_the_floor_alone_misses_the_style(
    open_sqlite: StoreFactory,
) -> None:
    """Why preferences bypass the floor: a style preference is far from the request."""
    store = open_sqlite()
    pref = "用户使用 TypeScript 开发，2 空格缩进，不使用分号"
    store.save([NewMemory(pref, ALICE, "preference")])
    query = "帮我写一个简单的 fetch 封装"
    state = RunState("s", query, [Message.system("sys"), Message.user(query)])
    await Recall(store, [ALICE], user=ALICE, limits=RecallLimits(preferences=0)).before_model_call(
        state
    )
    assert state.extra["memory_recall"]["block"] == ""
    state = RunState("s", query, [Message.system("sys"), Message.user(query)])
    await Recall(store, [ALICE], user=ALICE).before_model_call(state)
    assert pref in state.extra["memory_recall"]["block"]


async def test_the_runs_session_scope_is_searched(open_sqlite: StoreFactory) -> None:
    store = open_sqlite()
    note = "In this chat the user debugs the payment webhook retries."
    store.save([NewMemory(note, Scope("session", "chat-1"))])
    query = "why do the payment webhook retries fail?"
    recall = Recall(store, [ALICE], user=ALICE)
    mine = RunState("chat-1", query, [Message.system("sys"), Message.user(query)])
    other = RunState("chat-2", query, [Message.system("sys"), Message.user(query)])
    await recall.before_model_call(mine)
    await recall.before_model_call(other)
    assert note in mine.extra["memory_recall"]["block"]
    assert note not in other.extra["memory_recall"]["block"]


def test_recall_settings_come_from_the_config_and_the_old_floor_is_refused() -> None:
    from pydantic import ValidationError

    from xclaw.config import MemoryConfig
    from xclaw.memory.runtime import recall_limits

    section = MemoryConfig.model_validate(
        {"recall": {"min_similarity": 0.3, "preferences": 2, "kb_passages": 1}}
    ).recall
    limits = recall_limits(section)
    assert (limits.min_similarity, limits.preferences, limits.kb_passages) == (0.3, 2, 1)
    with pytest.raises(ValidationError, match="replaced by min_similarity"):
        MemoryConfig.model_validate({"recall": {"min_score": 0.1}})
