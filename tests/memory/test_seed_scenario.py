"""Acceptance, seed 003 ch. 08: a preference saved in one session is recalled in the next for
an ordinary request in either language, with the local embedder, and no unrelated fact
outranks it; knowledge-base passages are recalled beside it (§4.5 dual recall), bounded and
cited with their file and section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.memory.conftest import StoreFactory, memory_agent

from xclaw.core.messages import Message
from xclaw.core.model import ModelRequest
from xclaw.core.state import RunState
from xclaw.memory.base import PREFERENCE, MemoryScopes, NewMemory, Scope
from xclaw.memory.kb import KnowledgeBase
from xclaw.memory.recall import (
    DOCUMENTS_HEADING,
    PREFERENCE_MARK,
    RECALL_HEADING,
    Recall,
    RecallLimits,
)
from xclaw.memory.runtime import MemoryRuntime, open_memory
from xclaw.memory.settings import MemoryConfig
from xclaw.models.scripted import ScriptedModel

PREF = "用户使用 TypeScript 开发，2 空格缩进，不使用分号"
# Unrelated facts; with this embedder the first two are closer to "fetch wrapper" than PREF.
CAT = "用户的猫叫小白"
DATABASE = "项目使用 PostgreSQL 15 作为数据库"
DARK_MODE = "The user prefers dark mode in every editor."
REQUESTS = ["帮我写一个简单的 fetch 封装", "write me a small fetch wrapper"]
ALICE = Scope("user", "alice")


def _scopes(root: Path, session: str, user: str = "alice") -> MemoryScopes:
    return MemoryScopes(Scope("user", user), Scope("project", str(root)), Scope("session", session))


def _memory(open_store: StoreFactory, scopes: MemoryScopes) -> MemoryRuntime:
    config = MemoryConfig.model_validate({"extract": {"enabled": False}})
    return open_memory(config, scopes, store=open_store(), warm_up=False)


def _system(request: ModelRequest) -> str:
    assert request.messages[0].role == "system"
    return request.messages[0].text


def _save(text: str, kind: str = "fact") -> dict[str, object]:
    return {"name": "memory.save", "arguments": {"text": text, "kind": kind}}


@pytest.mark.parametrize("request_text", REQUESTS)
async def test_a_preference_from_one_session_shapes_the_next_in_either_language(
    open_store: StoreFactory, root: Path, request_text: str
) -> None:
    first = ScriptedModel(
        [
            {"tool_calls": [_save(PREF, PREFERENCE), _save(CAT), _save(DATABASE)]},
            {"tool_calls": [_save(DARK_MODE)]},
            "好的，我记住了。",
        ]
    )
    result = await memory_agent(first, root, _memory(open_store, _scopes(root, "s1"))).run(
        "我用 TypeScript 开发，代码风格是 2 空格缩进、不用分号。另外我的猫叫小白。"
    )
    assert result.ok, result.reason
    assert [c.result.ok for c in result.tool_calls] == [True] * 4
    assert result.tool_calls[0].result.data["kind"] == PREFERENCE
    first.assert_complete()

    # The next session: a new runtime on the same store, another session id.
    second = ScriptedModel(["export async function request(url: string) {...}"])
    memory = _memory(open_store, _scopes(root, "s2"))
    result = await memory_agent(second, root, memory).run(request_text)
    assert result.ok, result.reason
    sent = _system(second.requests[0])
    recalled = sent[sent.index(RECALL_HEADING) :]
    assert f"- {PREFERENCE_MARK}{PREF}" in recalled
    # Nothing unrelated outranks it: facts come after it, or not at all.
    for other in (CAT, DATABASE, DARK_MODE):
        assert other not in recalled or recalled.index(other) > recalled.index(PREF)
    assert DARK_MODE not in recalled  # below the similarity floor
    assert PREF not in result.messages[0].text  # the stored transcript is untouched

    other = ScriptedModel(["ok"])
    await memory_agent(other, root, _memory(open_store, _scopes(root, "s3", user="bob"))).run(
        request_text
    )
    assert PREF not in _system(other.requests[0])  # another user never sees it


async def test_the_floor_is_on_the_vector_score_not_the_blend(open_sqlite: StoreFactory) -> None:
    """Keyword overlap lifts an unrelated fact's blended score over the old 0.1 floor; its
    cosine stays under the similarity floor, so recall leaves it out."""
    store = open_sqlite()
    dog = "Fetch is the name of the user's dog."
    store.save([NewMemory(dog, ALICE), NewMemory(PREF, ALICE, PREFERENCE)])
    query = REQUESTS[0]
    [hit] = [h for h in store.search(query, scopes=[ALICE], k=5) if h.item.text == dog]
    limits = RecallLimits()
    assert hit.score >= 0.1 and hit.keyword_score  # the blend alone would have kept it
    assert hit.vector_score is not None and hit.vector_score < limits.min_similarity
    state = RunState("s", query, [Message.system("sys"), Message.user(query)])
    await Recall(store, [ALICE], user=ALICE, limits=limits).before_model_call(state)
    block = state.extra["memory_recall"]["block"]
    assert PREF in block and dog not in block


async def test_preferences_are_bounded_and_ranked(open_sqlite: StoreFactory) -> None:
    store = open_sqlite()
    style = [
        "The user writes Python with type hints everywhere.",
        "The user wants answers in French.",
        "The user likes Vim keybindings.",
        "The user names branches feature/<ticket>.",
        "The user prefers tabs over spaces in Go.",
        "The user wants commit messages in the imperative mood.",
    ]
    store.save([NewMemory(t, ALICE, PREFERENCE) for t in [PREF, *style]])
    state = RunState("s", REQUESTS[1], [Message.system("sys"), Message.user(REQUESTS[1])])
    recall = Recall(store, [ALICE], user=ALICE, limits=RecallLimits(preferences=3))
    await recall.before_model_call(state)
    block = state.extra["memory_recall"]["block"]
    shown = [line for line in block.splitlines() if line.startswith(f"- {PREFERENCE_MARK}")]
    assert len(shown) == 3
    ranked = store.search(REQUESTS[1], scopes=[ALICE], k=3, mode="vector")
    assert shown == [f"- {PREFERENCE_MARK}{h.item.text}" for h in ranked]


API_DOC = """\
# API reference

## Limits

### Rate limits

每分钟最多 60 次请求，超出限制返回 HTTP 429。客户端应实现指数退避重试：首次等待 1 秒，之后依次翻倍。

## Authentication

Send the token in the Authorization header as a Bearer token.
"""


async def test_kb_passages_are_recalled_beside_memories_bounded_and_cited(
    open_sqlite: StoreFactory, root: Path
) -> None:
    store = open_sqlite()
    store.save([NewMemory(PREF, ALICE, PREFERENCE)])
    doc = root / "docs" / "api.md"
    doc.parent.mkdir()
    endpoints = (
        f"\n## Endpoint {i}\n\nGET /items/{i} returns item {i} with its name, owner, price "
        "and stock level as JSON; it needs the Bearer token.\n"
        for i in range(8)
    )
    doc.write_text(API_DOC + "".join(endpoints), encoding="utf-8")
    project = Scope("project", str(root))
    kb = KnowledgeBase(store, project, chunk_size=60, overlap=10)
    assert kb.add([doc])[0].chunks >= 8  # many more passages than recall may bring

    model = ScriptedModel(["ok"])
    memory = open_memory(
        MemoryConfig.model_validate({"extract": {"enabled": False}}),
        MemoryScopes(ALICE, project, Scope("session", "s2")),
        store=store,
        warm_up=False,
    )
    assert memory.recall is not None
    limits = RecallLimits(kb_passages=2, kb_chars=600)
    memory.recall.limits = limits
    task = "用 TypeScript 帮我写一个遵循 API 文档限制的请求模块"
    result = await memory_agent(model, root, memory).run(task)
    assert result.ok, result.reason
    sent = _system(model.requests[0])
    assert sent.index(RECALL_HEADING) < sent.index(DOCUMENTS_HEADING)
    assert PREF in sent
    documents = sent[sent.index(DOCUMENTS_HEADING) :]
    real = doc.resolve()
    # The citation names the file, its lines and the heading path (the agent shows paths
    # inside the project relative to it).
    cited = re.compile(r"^\[1\] (?:\S*/)?docs/api\.md:1-7 § API reference › Limits › Rate limits$")
    assert any(cited.match(line) for line in documents.splitlines()), documents
    assert "每分钟最多 60 次请求" in documents
    entries = [e for e in documents.split("\n\n") if e.startswith("[")]
    assert 1 <= len(entries) <= limits.kb_passages
    assert sum(len(e) for e in entries) <= limits.kb_chars
    state = RunState("s2", task, [Message.system("sys"), Message.user(task)])
    await memory.recall.before_model_call(state)
    record = state.extra["memory_recall"]
    assert len(record["passages"]) == len(entries)
    assert all(c.startswith(f"{real}:") for c in record["passages"])
