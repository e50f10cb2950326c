"""A scripted coding session answers from the knowledge base and cites path:line; the cited
lines of the real seed document hold the answer."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from xclaw.coding.agent import Agent
from xclaw.memory.base import Scope
from xclaw.memory.embed import default_embedder
from xclaw.memory.kb import KnowledgeBase
from xclaw.memory.kb_tools import kb_search_tool
from xclaw.memory.sqlite_store import SqliteMemoryStore
from xclaw.models.scripted import ScriptedModel

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))

import build_retrieval_set as rs  # noqa: E402
import retrieval_eval as ev  # noqa: E402

SEEDS = rs.seeds_dir()
SEED_LINES = {p.name: p.read_text(encoding="utf-8").splitlines() for p in SEEDS.glob("*")}
_CITATION = re.compile(r"(?P<path>/\S+?):(?P<start>\d+)(?:-(?P<end>\d+))?\b")


@pytest.fixture
def seed_kb(tmp_path: Path) -> KnowledgeBase:
    assert SEEDS is not None
    inner = default_embedder()
    # Same chunking as the labelled set, so its committed vectors serve the seed chunks.
    known = ev.load_vectors(rs.seed_passages(SEEDS), inner.name)
    store = SqliteMemoryStore(tmp_path / "kb.db", ev.PrecomputedEmbedder(inner, known))
    kb = KnowledgeBase(store, Scope("user", "kb-session"), chunk_size=rs.SIZE, overlap=rs.OVERLAP)
    reports = kb.add([SEEDS])
    assert {r.status for r in reports} == {"added"}
    assert sum(r.chunks for r in reports) >= 800
    return kb


async def test_scripted_session_cites_the_passage_that_answers(
    seed_kb: KnowledgeBase, tmp_path: Path
) -> None:
    question = "元素找不到时自动恢复最多几轮？DEFAULT_ACTION_RECOVERY_ROUNDS 是多少"
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "kb.search", "arguments": {"query": question, "k": 3}}
                ]
            },
            {
                "expect": {"last_ok": True},
                "text": "默认恢复 2 轮（DEFAULT_ACTION_RECOVERY_ROUNDS=2），"
                "见 {{result:c1.data.passages.0.citation}}",
            },
        ]
    )
    project = tmp_path / "proj"
    project.mkdir()
    agent = Agent(model, project, tools=[kb_search_tool(seed_kb)], evidence_gate_enabled=False)
    try:
        result = await agent.run(question)
    finally:
        seed_kb.store.close()
    model.assert_complete()
    assert result.status == "completed", result.reason
    m = _CITATION.search(result.reply)
    assert m is not None, result.reply
    path = Path(m["path"])
    assert path.parent == SEEDS.resolve() and path.name.startswith("002_")
    start, end = int(m["start"]), int(m["end"] or m["start"])
    lines = SEED_LINES[path.name]
    cited = "\n".join(lines[start - 1 : end])
    assert "DEFAULT_ACTION_RECOVERY_ROUNDS=2" in cited


async def test_kb_search_tool_reports_a_store_refusal(tmp_path: Path) -> None:
    from xclaw.memory.embed import UseMultilingualEmbedder

    class Other(UseMultilingualEmbedder):
        name = "another-model"

    kb_path = tmp_path / "kb.db"
    first = SqliteMemoryStore(kb_path, default_embedder())
    first.save([])
    from xclaw.memory.base import NewMemory

    scope = Scope("user", "x")
    first.save([NewMemory("a fact to search", scope, "chunk", {"doc_id": "d", "path": "p"})])
    first.close()
    store = SqliteMemoryStore(kb_path, Other())
    try:
        tool = kb_search_tool(KnowledgeBase(store, scope))
        result = await tool.fn(query="fact")
    finally:
        store.close()
    assert not result.ok and result.error_code == "MEMORY_EMBEDDING_MISMATCH"
