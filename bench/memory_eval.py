"""Retrieval quality on the labelled set: recall@5 and MRR@5 of vector-only, keyword-only and
hybrid search (the SQLite store, the default embedder), beside reciprocal rank fusion (RRF,
k=60, over the top 20 of each side) as the peer's way to combine the same two rankings.

    python bench/memory_eval.py                 # the store's configured weights (0.7 / 0.3)
    python bench/memory_eval.py --weights 0.5,0.5

The set: tests/memory/data (README.md there says how it was made). A query counts as recalled
when a passage holding its answer is in the top 5. The last two rows are what recall puts in
the prompt: "recall (before)" the hybrid top 5 with a blended score >= 0.1 (the rule before
issue 24), "recall" the hybrid rank with the vector-similarity floor (RecallLimits).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "memory" / "data"))

import retrieval_eval as ev  # noqa: E402

from xclaw.memory.base import HybridWeights  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", help="vector,keyword weights of the hybrid blend")
    args = ap.parse_args()
    weights = None
    if args.weights:
        v, k = (float(x) for x in args.weights.split(","))
        weights = HybridWeights(vector=v, keyword=k)
    with tempfile.TemporaryDirectory() as tmp:
        run = ev.run_eval(Path(tmp) / "eval.db", weights, with_rrf=True)
    shown = weights or HybridWeights()
    print(
        f"{run.queries} queries over {run.passages} passages; hybrid weights vector "
        f"{shown.vector} / keyword {shown.keyword}; committed vectors vs live model: min cosine "
        f"{run.min_sample_cosine:.4f}; {run.seconds:.0f} s"
    )
    modes = (*ev.MODES, "rrf", *ev.RECALL_MODES)
    labels = {"rrf": "rrf (peer)", "recall_before": "recall (before)"}
    print(f"{'mode':16}{'recall@5':>10}{'MRR@5':>8}")
    for m in modes:
        print(f"{labels.get(m, m):16}{run.scores.recall(m):>10.3f}{run.scores.mrr(m):>8.3f}")
    best_single = max(run.scores.recall("vector"), run.scores.recall("keyword"))
    print(
        f"hybrid / best single side: {run.scores.recall('hybrid') / best_single:.3f}x; "
        f"hybrid / rrf: {run.scores.recall('hybrid') / run.scores.recall('rrf'):.3f}x"
    )
    print(f"\n{'group':18}{'n':>5}" + "".join(f"{m[:13]:>14}" for m in modes))
    for group, row in sorted(run.per_group.items()):
        cells = "".join(f"{row.get(m, float('nan')):>14.3f}" for m in modes)
        print(f"{group:18}{int(row['n']):>5}{cells}")


if __name__ == "__main__":
    main()
