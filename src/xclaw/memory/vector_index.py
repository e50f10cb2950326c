"""The in-memory vector index: one float32 matrix per scope, and exact cosines for every hit.

Small scopes are scanned exactly with BLAS. A scope of ``prescan_from`` vectors or more
(20,000 by default) also keeps an int8 copy of its matrix in a faiss scalar-quantiser index
(a quarter of the bytes to read per query); a search scans the int8 copy for a pool of
``max(256, 32 * n)`` candidates and re-ranks that pool with the float32 vectors, so scores are
exact cosines and only the candidate choice is approximate (recall@10 1.000 against the
exact scan on random and on real embeddings, 10k to 1M, bench/memory_index.py). Hand-written
around faiss rather than a faiss IVF or an HNSW library because those lose recall on 512-d
vectors without cluster structure: at 100k here, faiss IVF-SQ8 (nprobe 16-128 of 316) gave
recall@10 0.13-0.63 on random vectors (0.84-0.98 on real ones; ``--ivf`` in the bench), and
usearch HNSW 0.07-0.21 (a one-off trial); the int8 pre-scan needs no training or tuning.
Nothing is stored beside the SQLite rows: the int8 copy is rebuilt from the float32 vectors
when a store is reopened (about 0.5-1.5 s of the ~2.3 s first search at 100k).

A search only touches the blocks of the scopes it may see, so scopes cannot leak by
construction; a delete removes rows from both copies before the call returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import faiss

Vectors = npt.NDArray[np.float32]
_INITIAL_ROWS = 256
PRESCAN_FROM = 20_000  # scopes this large get the int8 pre-scan
POOL_FACTOR = 32  # candidates re-ranked exactly per result wanted ...
MIN_POOL = 256  # ... and never fewer than this
_SCALE_QUANTILE = 0.9999  # the int8 range covers this share of the components ...
_MAX_CLIPPED = 1e-3  # ... and is re-fitted once more than this share of later ones clip
_SCALE_SAMPLE_ROWS = 4_096  # rows the int8 range is fitted on
_ENCODE_ROWS = 8_192  # rows quantised per step (bounds the temporary float copy)


@dataclass(slots=True)
class _Prescan:
    """int8 codes of a block's rows, in the block's row order (faiss ids are positions)."""

    codes: faiss.IndexScalarQuantizer
    scale: float
    encoded: int = 0
    clipped: int = 0

    @classmethod
    def build(cls, vectors: Vectors) -> _Prescan:
        import faiss

        # Process-wide. One query is one memory-bound scan: on this busy 2-core box a second
        # OpenMP thread measured 1.2x to 5x slower (barrier waits), never faster.
        faiss.omp_set_num_threads(1)
        sample = vectors[:: max(1, len(vectors) // _SCALE_SAMPLE_ROWS)]  # every k-th row
        top = float(np.quantile(np.abs(sample), _SCALE_QUANTILE)) if len(sample) else 1.0
        codes = faiss.IndexScalarQuantizer(
            vectors.shape[1],
            faiss.ScalarQuantizer.QT_8bit_direct_signed,
            faiss.METRIC_INNER_PRODUCT,
        )
        prescan = cls(codes, 127.0 / max(top, 1e-6))
        prescan.add(vectors)
        prescan.encoded = prescan.clipped = 0  # the fitted rows set the scale, they don't drift
        return prescan

    def add(self, vectors: Vectors) -> None:
        for start in range(0, len(vectors), _ENCODE_ROWS):
            scaled = vectors[start : start + _ENCODE_ROWS] * np.float32(self.scale)
            self.clipped += int(np.count_nonzero(np.abs(scaled) > 127.5))
            self.encoded += scaled.size
            self.codes.add(np.clip(scaled, -128, 127))

    def drifted(self) -> bool:
        return self.clipped > _MAX_CLIPPED * max(self.encoded, 1)

    def remove(self, positions: npt.NDArray[np.int64]) -> None:
        import faiss

        self.codes.remove_ids(faiss.IDSelectorBatch(positions))  # keeps the others' order

    def candidates(
        self, query: Vectors, pool: int, allowed: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.int64]:
        import faiss

        params = None  # an empty SearchParameters() made faiss 1.15 return nothing
        if allowed is not None:
            bitmap = np.packbits(allowed, bitorder="little")  # alive until the search returns
            selector = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bitmap))
            params = faiss.SearchParameters()
            params.sel = selector
        # The SIMD path rounds the query to int8 too, so it takes the rows' scale.
        scaled = np.clip(query[None, :] * np.float32(self.scale), -128, 127)
        _, labels = self.codes.search(scaled, pool, params=params)
        found: npt.NDArray[np.int64] = labels[0]
        return found[found >= 0]


@dataclass(slots=True)
class _Block:
    dim: int
    prescan_from: int | None
    size: int = 0
    rowids: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    kinds: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    vectors: Vectors = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    prescan: _Prescan | None = None

    def add(self, rowids: Sequence[int], kinds: Sequence[int], vectors: Vectors) -> None:
        need = self.size + len(rowids)
        if need > len(self.rowids):
            cap = max(_INITIAL_ROWS, need, 2 * len(self.rowids))
            self.rowids = _grow(self.rowids, cap)
            self.kinds = _grow(self.kinds, cap)
            grown = np.zeros((cap, self.dim), np.float32)
            if self.size:
                grown[: self.size] = self.vectors[: self.size]
            self.vectors = grown
        end = self.size + len(rowids)
        self.rowids[self.size : end] = rowids
        self.kinds[self.size : end] = kinds
        self.vectors[self.size : end] = vectors
        self.size = end
        if self.prescan is not None:
            self.prescan.add(self.vectors[end - len(rowids) : end])
            if self.prescan.drifted():
                self.prescan = None  # re-fitted to all rows on the next search

    def remove(self, rowids: npt.NDArray[np.int64]) -> int:
        keep = ~np.isin(self.rowids[: self.size], rowids)
        n = int(keep.sum())
        removed = self.size - n
        if removed:
            if self.prescan is not None:
                self.prescan.remove(np.flatnonzero(~keep).astype(np.int64))
            self.rowids[:n] = self.rowids[: self.size][keep]
            self.kinds[:n] = self.kinds[: self.size][keep]
            self.vectors[:n] = self.vectors[: self.size][keep]
            self.size = n
        return removed

    def _prescan(self) -> _Prescan | None:
        if self.prescan_from is None or self.size < self.prescan_from:
            self.prescan = None
        elif self.prescan is None:
            self.prescan = _Prescan.build(self.vectors[: self.size])
        return self.prescan

    def scores(
        self, query: Vectors, kinds: npt.NDArray[np.int32] | None, n: int
    ) -> tuple[npt.NDArray[np.int64], Vectors]:
        """(rowid, exact cosine) of at least the best ``n`` allowed rows of this block."""
        allowed = None if kinds is None else np.isin(self.kinds[: self.size], kinds)
        if allowed is not None and allowed.all():
            allowed = None
        wanted = self.size if allowed is None else int(allowed.sum())
        pool = max(MIN_POOL, POOL_FACTOR * n)
        prescan = self._prescan()
        if prescan is not None and pool < wanted:
            pos = prescan.candidates(query, pool, allowed)
        elif allowed is not None:
            pos = np.flatnonzero(allowed)
        else:
            sims: Vectors = self.vectors[: self.size] @ query
            return self.rowids[: self.size], sims
        # einsum, not BLAS: a few hundred rows, and OpenBLAS's worker thread would spin on
        # after the call, taking a core from the next scan (2x slower here under load).
        sims = np.einsum("ij,j->i", self.vectors[pos], query)
        return self.rowids[pos], sims


G = TypeVar("G", bound=np.generic)


def _grow(arr: npt.NDArray[G], cap: int) -> npt.NDArray[G]:
    out = np.zeros(cap, arr.dtype)
    out[: len(arr)] = arr
    return out


class VectorIndex:
    """Cosine top-k over L2-normalised vectors, partitioned by scope key.

    ``prescan_from``: scopes with at least this many vectors are searched through the int8
    pre-scan and an exact re-rank; ``None`` scans every scope exactly.
    """

    def __init__(self, dim: int, *, prescan_from: int | None = PRESCAN_FROM) -> None:
        self.dim = dim
        self.prescan_from = prescan_from
        self._blocks: dict[str, _Block] = {}
        self._kind_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return sum(b.size for b in self._blocks.values())

    def _kind(self, kind: str) -> int:
        return self._kind_codes.setdefault(kind, len(self._kind_codes))

    def add(
        self, scope: str, rowids: Sequence[int], kinds: Sequence[str], vectors: Vectors
    ) -> None:
        block = self._blocks.setdefault(scope, _Block(self.dim, self.prescan_from))
        block.add(rowids, [self._kind(k) for k in kinds], vectors)

    def remove(self, rowids: Iterable[int]) -> int:
        ids = np.fromiter(rowids, np.int64)
        return sum(b.remove(ids) for b in self._blocks.values()) if len(ids) else 0

    def prepare(self) -> None:
        """Build the int8 pre-scan of every large scope now rather than on its first search."""
        for block in self._blocks.values():
            block._prescan()

    def search(
        self, query: Vectors, scopes: Sequence[str], n: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """Up to ``n`` (rowid, cosine) pairs from the given scopes, best first."""
        kind_codes = None
        if kinds is not None:
            kind_codes = np.array(
                [self._kind_codes[k] for k in kinds if k in self._kind_codes], np.int32
            )
        if n <= 0:
            return []
        query = np.ascontiguousarray(query, np.float32)
        parts = [
            self._blocks[s].scores(query, kind_codes, n)
            for s in dict.fromkeys(scopes)
            if s in self._blocks
        ]
        if not parts:
            return []
        rowids = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        sims = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
        if len(sims) > n:
            top = np.argpartition(-sims, n - 1)[:n]
            rowids, sims = rowids[top], sims[top]
        order = np.lexsort((rowids, -sims))  # best first; equal scores by rowid
        return [(int(rowids[i]), float(sims[i])) for i in order]
