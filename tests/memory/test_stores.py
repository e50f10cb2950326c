"""Both backends, one behaviour: scoped save/search/list/get/delete, hybrid ranking,
Chinese keywords, and a model change that is refused until re-embedded."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.memory.conftest import CountingEmbedder, StoreFactory, TruncatedEmbedder

from xclaw.memory.base import EmbeddingMismatch, MemoryStoreError, NewMemory, Scope
from xclaw.memory.embed import EmbeddingError

ALICE = Scope("user", "alice")
BOB = Scope("user", "bob")
PROJECT = Scope("project", "/home/alice/shop")

FACTS = [
    NewMemory("用户使用 TypeScript，2 空格缩进，不用分号", ALICE),
    NewMemory("The deploy script lives in ops/deploy.sh and needs the PROD_TOKEN variable", ALICE),
    NewMemory("Alice's cat is called Miso", ALICE),
    NewMemory("项目的数据库是 PostgreSQL 16，迁移用 alembic", PROJECT),
    NewMemory("Bob prefers tabs and writes Go", BOB),
]


def test_search_finds_the_related_fact_across_languages(open_store: StoreFactory) -> None:
    store = open_store()
    store.save(FACTS)
    hits = store.search("which indentation style and language does the user like?", scopes=[ALICE])
    assert hits[0].item.text.startswith("用户使用 TypeScript")
    hits = store.search("部署脚本在哪里？", scopes=[ALICE], k=1)
    assert "deploy.sh" in hits[0].item.text
    assert hits[0].item.embed_model == store.embed_model and hits[0].item.dim == store.dim


def test_scopes_never_leak(open_store: StoreFactory) -> None:
    store = open_store()
    ids = store.save(FACTS)
    bob_id, alice_id = ids[4], ids[0]
    for mode in ("hybrid", "vector", "keyword"):
        hits = store.search("Bob prefers tabs and writes Go", scopes=[ALICE, PROJECT], mode=mode)
        assert all(h.item.scope in (ALICE, PROJECT) for h in hits), mode
        assert bob_id not in {h.item.id for h in hits}
        only_bob = store.search("TypeScript 缩进 deploy", scopes=[BOB], mode=mode, k=10)
        assert {h.item.id for h in only_bob} <= {bob_id}, mode
    assert {i.id for i in store.list(scopes=[BOB])} == {bob_id}
    assert store.get(alice_id, scopes=[BOB]) is None
    assert store.get(alice_id, scopes=[ALICE]) is not None
    assert store.delete([alice_id], scopes=[BOB]) == 0  # someone else's id: untouched
    assert store.get(alice_id, scopes=[ALICE]) is not None
    assert store.delete([alice_id], scopes=[ALICE]) == 1
    assert store.get(alice_id, scopes=[ALICE]) is None
    assert alice_id not in {h.item.id for h in store.search("TypeScript", scopes=[ALICE])}
    with pytest.raises(MemoryStoreError):
        store.search("anything", scopes=[])


def test_keyword_side_handles_chinese_and_hybrid_blends(open_store: StoreFactory) -> None:
    store = open_store()
    store.save(FACTS)
    hits = store.search("数据库迁移", scopes=[ALICE, PROJECT], mode="keyword")
    assert hits and "alembic" in hits[0].item.text
    assert hits[0].keyword_score is not None and hits[0].vector_score is None
    hybrid = store.search("数据库迁移", scopes=[ALICE, PROJECT], mode="hybrid")[0]
    assert "alembic" in hybrid.item.text
    assert hybrid.vector_score is not None and hybrid.keyword_score is not None
    assert hybrid.score == pytest.approx(
        0.7 * max(hybrid.vector_score, 0) + 0.3 * hybrid.keyword_score, abs=1e-4
    )
    assert store.search("zzzz qqqq", scopes=[ALICE], mode="keyword") == []


def test_list_is_newest_first_and_filters_kinds(open_store: StoreFactory) -> None:
    store = open_store()
    store.save([NewMemory("first fact about apples", ALICE)])
    store.save([NewMemory("second fact about pears", ALICE)])
    chunk = NewMemory(
        "a chunk of a manual", ALICE, "chunk", source={"doc_id": "manual", "path": "m.md"}
    )
    store.save([chunk])
    assert [i.text for i in store.list(scopes=[ALICE], kinds=["fact"])] == [
        "second fact about pears",
        "first fact about apples",
    ]
    hits = store.search("manual", scopes=[ALICE], kinds=["chunk"])
    assert [h.item.kind for h in hits] == ["chunk"] and hits[0].item.source == chunk.source
    assert store.delete_source("manual", scope=BOB) == 0
    assert store.delete_source("manual", scope=ALICE) == 1
    assert store.list(scopes=[ALICE], kinds=["chunk"]) == []


def test_a_model_change_is_refused_until_reembedded(
    open_store: StoreFactory, local_embedder: object
) -> None:
    store = open_store()
    store.save(FACTS[:3])
    store.close()
    renamed = CountingEmbedder(local_embedder, name="another-model")  # type: ignore[arg-type]
    store = open_store(renamed)
    assert store.stale_count() == 3
    with pytest.raises(EmbeddingMismatch) as err:
        store.search("TypeScript", scopes=[ALICE])
    assert "xclaw memory reembed" in err.value.hint
    assert store.search("TypeScript", scopes=[ALICE], mode="keyword")  # no vectors involved
    assert store.reembed() == 3 and len(renamed.texts) == 3
    assert store.stale_count() == 0
    hits = store.search("TypeScript indentation", scopes=[ALICE])
    assert hits[0].item.embed_model == "another-model"
    store.close()
    smaller = TruncatedEmbedder(local_embedder, 128)  # type: ignore[arg-type]
    store = open_store(smaller)
    with pytest.raises(EmbeddingMismatch):
        store.search("TypeScript", scopes=[ALICE])
    assert store.reembed() == 3
    hit = store.search("TypeScript indentation", scopes=[ALICE])[0]
    assert (hit.item.embed_model, hit.item.dim) == (smaller.name, 128)


def test_invalid_input_is_refused(open_store: StoreFactory) -> None:
    store = open_store()
    with pytest.raises(MemoryStoreError):
        store.save([NewMemory("   ", ALICE)])
    with pytest.raises(MemoryStoreError):
        store.save([NewMemory("fine", ALICE, kind="x' or 1=1")])
    with pytest.raises(MemoryStoreError):
        Scope("user", 'a"] or scope != ["')
    liar = open_store(_WrongSize())
    with pytest.raises(EmbeddingError, match="shape"):
        liar.save([NewMemory("a fact", ALICE)])
    assert store.list(scopes=[ALICE]) == []


class _WrongSize:
    """An embedder whose vectors are not the size it declares."""

    name = "use-multilingual-v3"
    dim = 512

    def embed(self, texts: object) -> object:
        import numpy as np

        return np.ones((len(texts), 4), np.float32)  # type: ignore[arg-type]


def test_unusual_scope_and_document_ids_are_quoted_safely(open_store: StoreFactory) -> None:
    store = open_store()
    spaced = Scope("project", "/home/me/My Project 项目")
    doc = 'we"ird \\ doc 文档'
    [kept] = store.save([NewMemory("数据库用 PostgreSQL", PROJECT)])
    store.save([NewMemory("数据库用 MySQL", spaced, "chunk", source={"doc_id": doc})])
    assert [h.item.text for h in store.search("数据库", scopes=[spaced])] == ["数据库用 MySQL"]
    assert store.delete_source(doc, scope=PROJECT) == 0
    assert store.delete_source(doc, scope=spaced) == 1
    assert [i.id for i in store.list(scopes=[spaced, PROJECT])] == [kept]


class _ConstantVectors:
    """A test double for keyword-only checks: every text gets the same unit vector."""

    name = "constant-test-vectors"
    dim = 4

    def embed(self, texts: object) -> object:
        import numpy as np

        return np.tile(np.array([[1, 0, 0, 0]], np.float32), (len(texts), 1))  # type: ignore[arg-type]


def test_common_terms_are_left_out_of_large_keyword_queries(tmp_path: Path) -> None:
    from xclaw.memory.sqlite_store import SqliteMemoryStore

    store = SqliteMemoryStore(tmp_path / "m.db", _ConstantVectors())  # type: ignore[arg-type]
    rows = [NewMemory(f"the note {i} about the 项目", ALICE) for i in range(1_100)]
    store.save([*rows, NewMemory("the zebra escaped from the 动物园", ALICE)])
    assert store._informative_terms(["the", "zebra", "项目", "missing"]) == ["zebra"]
    hits = store.search("the zebra", scopes=[ALICE], mode="keyword")
    assert [h.item.text for h in hits] == ["the zebra escaped from the 动物园"]
    # Only common terms: no keyword evidence at all (the vector side ranks alone).
    assert store._informative_terms(["the", "项目"]) == []
    assert store.search("the 项目", scopes=[ALICE], mode="keyword") == []
    store.close()
