"""The vector index: the int8 pre-scan with exact re-rank against the exact scan (recall,
exact scores, kinds, deletes, scopes) and the SQLite store rebuilding it after a reopen."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from xclaw.memory.base import NewMemory, Scope
from xclaw.memory.sqlite_store import SqliteMemoryStore
from xclaw.memory.vector_index import VectorIndex

DIM = 64
PRESCAN_FROM = 500  # small, so a few thousand vectors take the pre-scan path


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(n: int, seed: int = 0, noise: float = 0.15) -> np.ndarray:
    """Vectors around n // 20 centres: near neighbours differ by small margins."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((max(n // 20, 1), DIM)))
    picks = centres[rng.integers(0, len(centres), n)]
    return unit(picks + noise * rng.standard_normal((n, DIM)))


def pair(vectors: np.ndarray, scope: str = "s", kinds: Sequence[str] | None = None):
    """The same rows in a pre-scan index and in an exact one."""
    fast, exact = VectorIndex(DIM, prescan_from=PRESCAN_FROM), VectorIndex(DIM, prescan_from=None)
    rowids = list(range(1, len(vectors) + 1))
    kinds = list(kinds or ["chunk"] * len(vectors))
    for index in (fast, exact):
        index.add(scope, rowids, kinds, vectors)
    return fast, exact


def same(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> bool:
    """Same rows in the same order, and cosines equal to float32 rounding."""
    return [r for r, _ in got] == [r for r, _ in want] and all(
        abs(a - b) < 1e-5 for (_, a), (_, b) in zip(got, want, strict=True)
    )


def test_prescan_recall_and_scores_match_the_exact_scan() -> None:
    vectors = clustered(3_000)
    fast, exact = pair(vectors)
    queries = clustered(40, seed=1)
    recalled = []
    for q in queries:
        got, want = fast.search(q, ["s"], 10), exact.search(q, ["s"], 10)
        recalled.append(len({r for r, _ in got} & {r for r, _ in want}) / 10)
        for rowid, score in got:  # scores are exact cosines, not int8 estimates
            assert score == pytest.approx(float(vectors[rowid - 1] @ q), abs=1e-5)
    assert fast._blocks["s"].prescan is not None  # the pre-scan path answered
    assert np.mean(recalled) >= 0.95


def test_small_scopes_stay_exact() -> None:
    fast, exact = pair(clustered(PRESCAN_FROM - 1))
    q = clustered(1, seed=2)[0]
    assert same(fast.search(q, ["s"], 5), exact.search(q, ["s"], 5))
    assert fast._blocks["s"].prescan is None


def test_deleted_rows_are_never_returned_and_positions_stay_aligned() -> None:
    vectors = clustered(2_000)
    fast, exact = pair(vectors)
    queries = clustered(20, seed=3)
    fast.search(queries[0], ["s"], 5)  # builds the pre-scan before the deletes
    gone = {r for q in queries for r, _ in exact.search(q, ["s"], 5)} | set(range(1, 2_000, 3))
    assert fast.remove(gone) == exact.remove(gone) == len(gone)
    for q in queries:
        got = fast.search(q, ["s"], 10)
        assert not {r for r, _ in got} & gone
        assert [r for r, _ in got] == [r for r, _ in exact.search(q, ["s"], 10)]
        for rowid, score in got:  # a shifted int8 row would pair a rowid with another vector
            assert score == pytest.approx(float(vectors[rowid - 1] @ q), abs=1e-5)


def test_kind_filter_is_applied_inside_the_prescan() -> None:
    vectors = clustered(3_000)
    kinds = ["fact" if i % 10 == 0 else "chunk" for i in range(len(vectors))]
    fast, exact = pair(vectors, kinds=kinds)
    for q in clustered(10, seed=4):
        for wanted in (["fact"], ["chunk"], ["fact", "chunk"], ["missing"]):
            got = fast.search(q, ["s"], 5, kinds=wanted)
            assert all(kinds[r - 1] in wanted for r, _ in got)
            assert same(got, exact.search(q, ["s"], 5, kinds=wanted))


def test_scopes_never_leak() -> None:
    vectors = clustered(1_200)
    index = VectorIndex(DIM, prescan_from=PRESCAN_FROM)
    index.add("a", list(range(1, 1_201)), ["chunk"] * 1_200, vectors)
    index.add("b", list(range(10_001, 11_201)), ["chunk"] * 1_200, vectors)  # same vectors
    q = vectors[7]
    assert {r for r, _ in index.search(q, ["a"], 20)} <= set(range(1, 1_201))
    assert {r for r, _ in index.search(q, ["b"], 20)} <= set(range(10_001, 11_201))
    assert index.search(q, ["c"], 20) == []
    both = index.search(q, ["a", "b"], 2)
    assert sorted(r for r, _ in both) == [8, 10_008]


def test_rows_added_after_the_build_are_found_and_a_drift_refits_the_scale() -> None:
    fast, exact = pair(clustered(1_000))
    q = clustered(1, seed=5)[0]
    fast.search(q, ["s"], 5)
    first = fast._blocks["s"].prescan
    assert first is not None
    near = unit(q[None, :] + 0.01 * np.arange(1, 4)[:, None])  # closer than any stored row
    for index in (fast, exact):
        index.add("s", [5_001, 5_002, 5_003], ["chunk"] * 3, near)
    assert [r for r, _ in fast.search(q, ["s"], 3)] == [5_001, 5_002, 5_003]
    spiky = np.zeros((50, DIM), np.float32)
    spiky[:, 0] = 1.0  # far outside the fitted int8 range: clips, so the scale is re-fitted
    spiky[:, 1] = np.linspace(0, 0.5, 50)
    spiky = unit(spiky)
    for index in (fast, exact):
        index.add("s", list(range(6_000, 6_050)), ["chunk"] * 50, spiky)
    assert fast._blocks["s"].prescan is None
    assert same(fast.search(spiky[0], ["s"], 5), exact.search(spiky[0], ["s"], 5))
    assert fast._blocks["s"].prescan is not first


def test_results_are_deterministic() -> None:
    vectors = clustered(2_000)
    a, _ = pair(vectors)
    b, _ = pair(vectors)
    for q in clustered(5, seed=6):
        assert a.search(q, ["s"], 10) == a.search(q, ["s"], 10) == b.search(q, ["s"], 10)


class TableEmbedder:
    """Looks each text's vector up: store tests without model time."""

    name = "table"
    dim = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.vstack([self.table[t] for t in texts])


def test_store_rebuilds_the_prescan_after_reopen_and_honours_deletes(tmp_path: Path) -> None:
    vectors = clustered(1_500)
    queries = clustered(5, seed=7)
    table = {f"item {i}": v for i, v in enumerate(vectors)}
    table |= {f"query {i}": q for i, q in enumerate(queries)}
    emb = TableEmbedder(table)
    scope, other = Scope("project", "a"), Scope("project", "b")
    path = tmp_path / "m.db"

    def top(store: SqliteMemoryStore, i: int, scopes: list[Scope]) -> list[str]:
        hits = store.search(f"query {i}", scopes=scopes, k=5, mode="vector")
        return [h.item.text for h in hits]

    def exact(i: int, alive: set[int]) -> list[str]:
        ids = np.array(sorted(alive))
        scores = vectors[ids] @ queries[i]
        return [f"item {ids[j]}" for j in np.argsort(-scores, kind="stable")[:5]]

    store = SqliteMemoryStore(path, emb, prescan_from=PRESCAN_FROM)
    store.save([NewMemory(f"item {i}", scope, "fact") for i in range(1_400)])
    store.save([NewMemory(f"item {i}", other, "fact") for i in range(1_400, 1_500)])
    before = [top(store, i, [scope]) for i in range(5)]
    assert store._vector_index()._blocks[scope.key].prescan is not None
    assert before == [exact(i, set(range(1_400))) for i in range(5)]
    store.close()

    store = SqliteMemoryStore(path, emb, prescan_from=PRESCAN_FROM)
    try:
        assert [top(store, i, [scope]) for i in range(5)] == before
        by_text = {m.text: m.id for m in store.list(scopes=[scope], limit=2_000)}
        gone = {int(t.split()[1]) for hits in before for t in hits}
        store.delete([by_text[f"item {i}"] for i in gone], scopes=[scope])
        alive = set(range(1_400)) - gone
        assert [top(store, i, [scope]) for i in range(5)] == [exact(i, alive) for i in range(5)]
        assert all(int(t.split()[1]) >= 1_400 for i in range(5) for t in top(store, i, [other]))
    finally:
        store.close()
    store = SqliteMemoryStore(path, emb, prescan_from=PRESCAN_FROM)
    try:
        assert [top(store, i, [scope]) for i in range(5)] == [exact(i, alive) for i in range(5)]
    finally:
        store.close()


def test_a_store_sees_what_another_connection_committed(tmp_path: Path) -> None:
    """A gateway's open store finds memories `xclaw kb add` saved from another process."""
    vectors = clustered(2, seed=9)
    emb = TableEmbedder({"alpha": vectors[0], "beta": vectors[1]})
    scope = Scope("user", "ada")
    reader = SqliteMemoryStore(tmp_path / "memory.db", emb)
    writer = SqliteMemoryStore(tmp_path / "memory.db", emb)
    try:
        reader.save([NewMemory("alpha", scope)])
        assert [h.item.text for h in reader.search("alpha", scopes=[scope], mode="vector")] == [
            "alpha"
        ]
        assert reader.count() == 1
        writer.save([NewMemory("beta", scope)])
        assert reader.count() == 2
        found = reader.search("beta", scopes=[scope], k=1, mode="vector")
        assert [h.item.text for h in found] == ["beta"]
        writer.delete([found[0].item.id], scopes=[scope])
        assert reader.count() == 1
        assert [h.item.text for h in reader.search("beta", scopes=[scope], mode="vector")] == [
            "alpha"
        ]
    finally:
        reader.close()
        writer.close()
