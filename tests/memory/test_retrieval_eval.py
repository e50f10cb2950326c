"""The labelled retrieval set: its shape, its labels, and hybrid beating vector and keyword
search on the SQLite store with the default embedder (figures: bench/memory_eval.py)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))

import build_retrieval_set as rs  # noqa: E402
import retrieval_eval as ev  # noqa: E402


def test_the_set_is_large_mixed_and_cross_language() -> None:
    passages = rs.all_passages()
    labels = ev.load_labels()
    assert len(passages) >= 2000
    assert len({p["id"] for p in passages}) == len(passages)
    assert len(labels) >= 200
    langs = Counter((q["lang"], q["target"]) for q in labels)
    assert langs[("zh", "en")] + langs[("en", "zh")] >= 40
    assert langs[("zh", "zh")] >= 40 and langs[("en", "en")] >= 40
    assert {q["type"] for q in labels} == {"paraphrase", "keyword", "exact", "cross"}
    assert len({q["query"] for q in labels}) == len(labels)
    sources = Counter(p["source"] for p in passages)
    assert sources["py"] >= 900 and sum(n for s, n in sources.items() if s != "py") >= 900


def test_every_label_points_at_a_passage_holding_its_answer() -> None:
    ev.check_labels(ev.load_labels(), rs.all_passages())


def test_a_wrong_label_is_caught() -> None:
    labels = ev.load_labels()[:1]
    labels[0] = {**labels[0], "relevant": [rs.load_english()[0]["id"]]}
    with pytest.raises(AssertionError):
        ev.check_labels(labels, rs.all_passages())


def test_hybrid_beats_vector_only_and_keyword_only(tmp_path: Path) -> None:
    run = ev.run_eval(tmp_path / "eval.db")
    assert run.min_sample_cosine > 0.99, "committed passage vectors match the live model"
    recall = {m: run.scores.recall(m) for m in ev.MODES}
    print({m: round(v, 3) for m, v in recall.items()})
    assert recall["vector"] > 0.4 and recall["keyword"] > 0.4  # both sides really work
    assert recall["hybrid"] > max(recall["vector"], recall["keyword"])
    # What recall brings into the prompt does not drop below the rule it replaced.
    assert run.scores.recall("recall") >= run.scores.recall("recall_before")
    # Cross-language queries share no words with their passages: only vectors find them.
    assert run.per_group["type:cross"]["vector"] > run.per_group["type:cross"]["keyword"]
