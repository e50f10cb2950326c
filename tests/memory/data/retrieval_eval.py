"""Score the labelled retrieval set on a real store: recall@5 and MRR per search mode.

A query counts as recalled when a passage holding its answer is among the top 5 (most answers
sit in one passage, some in two overlapping ones); MRR is the mean of 1/rank of the first such
passage within the top 5, 0 when none. Used by tests/memory/test_retrieval_eval.py and
bench/memory_eval.py.

Passage vectors come from passage_vectors.npz (written by build_retrieval_set.py with the
default embedder, so the test need not embed 2,000 passages on two cores); a sample of them is
re-embedded live and must match, and every query is embedded live.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from build_retrieval_set import QUERIES, VECTORS, all_passages  # type: ignore[import-not-found]

MODES = ("vector", "keyword", "hybrid")
# What recall puts in the prompt: before issue 24, the hybrid top 5 with a blended score of at
# least 0.1; now the hybrid rank over top_k * candidates hits, floored on the vector score.
RECALL_MODES = ("recall_before", "recall")
OLD_BLENDED_FLOOR = 0.1
K = 5


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PrecomputedEmbedder:
    """The real embedder, with known passage vectors served from the committed file."""

    def __init__(self, inner: Any, known: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.known = known
        self.live_texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if _key(t) not in self.known]
        if missing:
            self.live_texts += len(missing)
            for t, v in zip(missing, self.inner.embed(missing), strict=True):
                self.known[_key(t)] = v
        return np.vstack([self.known[_key(t)] for t in texts]).astype(np.float32)


def load_vectors(passages: list[dict[str, Any]], model: str) -> dict[str, np.ndarray]:
    data = np.load(VECTORS, allow_pickle=False)
    if str(data["model"]) != model:
        raise AssertionError(f"passage vectors are from {data['model']}, not {model}; rebuild")
    by_id = dict(zip(data["ids"].tolist(), data["vectors"].astype(np.float32), strict=True))
    missing = [p["id"] for p in passages if p["id"] not in by_id]
    if missing:
        raise AssertionError(f"{len(missing)} passages have no vector (sources changed?)")
    out = {}
    for p in passages:
        v = by_id[p["id"]]
        out[_key(p["text"])] = v / np.linalg.norm(v)
    return out


def check_sample(
    inner: Any, passages: list[dict[str, Any]], known: dict[str, np.ndarray], n: int = 12
) -> float:
    """Lowest cosine between committed and live vectors of ``n`` random passages."""
    sample = random.Random(11).sample(passages, n)
    live = inner.embed([p["text"] for p in sample])
    return float(min(float(live[i] @ known[_key(p["text"])]) for i, p in enumerate(sample)))


@dataclass
class Scores:
    hits: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    rr: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    groups: dict[tuple[str, str], list[bool]] = field(default_factory=lambda: defaultdict(list))

    def recall(self, mode: str) -> float:
        return sum(self.hits[mode]) / len(self.hits[mode])

    def mrr(self, mode: str) -> float:
        return sum(self.rr[mode]) / len(self.rr[mode])


@dataclass
class EvalRun:
    passages: int
    queries: int
    scores: Scores
    min_sample_cosine: float
    seconds: float
    per_group: dict[str, dict[str, float]]


def load_labels() -> list[dict[str, Any]]:
    return json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]


def check_labels(labels: list[dict[str, Any]], passages: list[dict[str, Any]]) -> None:
    """Every labelled id exists and holds the query's answer phrase."""
    text = {p["id"]: " ".join(p["text"].split()).casefold() for p in passages}
    for q in labels:
        answer = " ".join(q["answer"].split()).casefold()
        if not q["relevant"]:
            raise AssertionError(f"{q['qid']} has no relevant passage")
        for pid in q["relevant"]:
            if pid not in text or answer not in text[pid]:
                raise AssertionError(f"{q['qid']}: passage {pid} missing or without the answer")


RRF_K = 60  # the constant of Cormack et al. (2009), used as is by most RRF implementations
RRF_DEPTH = 20


def rrf(vector: list[str], keyword: list[str], k: int = K) -> list[str]:
    """Reciprocal rank fusion of two rankings of doc ids (the peer's hybrid)."""
    score: dict[str, float] = defaultdict(float)
    for ranking in (vector, keyword):
        for rank, pid in enumerate(ranking, 1):
            score[pid] += 1.0 / (RRF_K + rank)
    return sorted(score, key=lambda p: (-score[p], p))[:k]


def _score(scores: Scores, q: dict[str, Any], mode: str, ranked: list[str]) -> None:
    relevant = set(q["relevant"])
    ranks = [i for i, pid in enumerate(ranked[:K], 1) if pid in relevant]
    scores.hits[mode].append(bool(ranks))
    scores.rr[mode].append(1.0 / ranks[0] if ranks else 0.0)
    scores.groups[(mode, f"{q['lang']}->{q['target']}")].append(bool(ranks))
    scores.groups[(mode, "type:" + q["type"])].append(bool(ranks))


def _recall_paths(store: Any, query: str, scope: Any) -> dict[str, list[str]]:
    """The passages each recall rule would bring for ``query`` (see RECALL_MODES)."""
    from xclaw.memory.recall import RecallLimits, select_by_rank

    limits = RecallLimits(top_k=K)

    def ids(hits: Any) -> list[str]:
        return [str((h.item.source or {}).get("doc_id")) for h in hits]

    top = store.search(query, scopes=[scope], k=K, kinds=["chunk"])
    wide = store.search(query, scopes=[scope], k=K * limits.candidates, kinds=["chunk"])
    return {
        "recall_before": ids(h for h in top if h.score >= OLD_BLENDED_FLOOR),
        "recall": ids(select_by_rank(wide, limits.min_similarity, K)),
    }


def run_eval(db_path: Path, weights: Any = None, *, with_rrf: bool = False) -> EvalRun:
    from xclaw.memory.base import NewMemory, Scope
    from xclaw.memory.embed import default_embedder
    from xclaw.memory.sqlite_store import SqliteMemoryStore

    started = time.perf_counter()
    passages = all_passages()
    labels = load_labels()
    check_labels(labels, passages)
    inner = default_embedder()
    known = load_vectors(passages, inner.name)
    min_cos = check_sample(inner, passages, known)
    embedder = PrecomputedEmbedder(inner, known)
    embedder.embed([q["query"] for q in labels])  # one batch, not one call per search
    scope = Scope("project", "retrieval-eval")
    store = SqliteMemoryStore(db_path, embedder, weights=weights)
    try:
        items = [
            NewMemory(p["text"], scope, "chunk", {"doc_id": p["id"], "path": p["source"]})
            for p in passages
        ]
        store.save(items)
        scores = Scores()
        for q in labels:
            ranked: dict[str, list[str]] = {}
            for mode in MODES:
                depth = RRF_DEPTH if with_rrf and mode != "hybrid" else K
                hits = store.search(q["query"], scopes=[scope], k=depth, mode=mode, kinds=["chunk"])
                ranked[mode] = [str((h.item.source or {}).get("doc_id")) for h in hits]
                _score(scores, q, mode, ranked[mode])
            if with_rrf:
                _score(scores, q, "rrf", rrf(ranked["vector"], ranked["keyword"]))
            for mode, ids in _recall_paths(store, q["query"], scope).items():
                _score(scores, q, mode, ids)
    finally:
        store.close()
    per_group: dict[str, dict[str, float]] = defaultdict(dict)
    for (mode, group), hits in sorted(scores.groups.items()):
        per_group[group][mode] = sum(hits) / len(hits)
        per_group[group]["n"] = len(hits)
    return EvalRun(
        len(passages), len(labels), scores, min_cos, time.perf_counter() - started, dict(per_group)
    )
