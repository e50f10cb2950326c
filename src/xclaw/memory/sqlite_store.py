"""The embedded memory store: one SQLite file with rows, float32 vector blobs and FTS5.

Vectors are searched by an in-memory ``VectorIndex`` (exact scan; int8 pre-scan plus exact
re-rank for large scopes) built from the rows on first search and kept in step with every
write; keywords go through FTS5 over ``terms`` (words, and CJK text split into bigrams); query
terms found in over a tenth of a large store are left out of the keyword query, as stop words
are (they carry almost no BM25 weight, yet make FTS5 score every row).
Hybrid ranking blends both as OpenClaw does: cosine and BM25, each brought to [0, 1], summed
with weights (0.7 / 0.3 by default).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from xclaw.memory.base import (
    Hit,
    HybridWeights,
    MemoryItem,
    MemoryStore,
    MemoryStoreError,
    NewMemory,
    Scope,
    SearchMode,
    check_kind,
    check_text,
    scope_keys,
)
from xclaw.memory.embed import Embedder, checked_vectors
from xclaw.memory.terms import coverage, index_text, keyword_terms, match_query
from xclaw.memory.vector_index import PRESCAN_FROM, VectorIndex

SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  source TEXT,
  doc_id TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at REAL NOT NULL,
  embed_model TEXT NOT NULL,
  dim INTEGER NOT NULL,
  vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_scope ON memories (scope, kind, created_at);
CREATE INDEX IF NOT EXISTS memories_doc ON memories (scope, doc_id);
CREATE INDEX IF NOT EXISTS memories_model ON memories (embed_model, dim);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
  terms, tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, 'row');
"""
_COLUMNS = "id, scope, kind, text, source, metadata, created_at, embed_model, dim"
_CHUNK = 500  # bound parameters per statement, below SQLite's limit
_COMMON_SHARE = 0.1  # a term in more of the rows than this is a stop word ...
_COMMON_FROM_ROWS = 1_000  # ... once the store is this large


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def new_id() -> str:
    return secrets.token_hex(8)


class SqliteMemoryStore(MemoryStore):
    def __init__(
        self,
        path: str | Path,
        embedder: Embedder,
        *,
        weights: HybridWeights | None = None,
        prescan_from: int | None = PRESCAN_FROM,
    ) -> None:
        self.path = Path(path)
        self.prescan_from = prescan_from  # see VectorIndex; None: exact scan at any size
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.embedder = embedder
        self.embed_model = embedder.name
        self.dim = embedder.dim
        self.weights = weights or HybridWeights()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.RLock()
        self._index: VectorIndex | None = None
        self._stale: int | None = None
        self._rows: int | None = None
        self._version = self._data_version()

    # -- writes ---------------------------------------------------------------------------
    def save(self, items: Sequence[NewMemory]) -> list[str]:
        if not items:
            return []
        texts = [check_text(m.text) for m in items]
        vectors = checked_vectors(self.embedder, texts)
        now = time.time()
        ids = [new_id() for _ in items]
        rows = [
            (
                ids[i],
                m.scope.key,
                check_kind(m.kind),
                texts[i],
                json.dumps(m.source, ensure_ascii=False) if m.source is not None else None,
                str(m.source.get("doc_id")) if m.source and m.source.get("doc_id") else None,
                json.dumps(m.metadata, ensure_ascii=False, default=str),
                now,
                self.embed_model,
                self.dim,
                vectors[i].tobytes(),
            )
            for i, m in enumerate(items)
        ]
        with self._lock, self._transaction():
            rowids = []
            for row, text in zip(rows, texts, strict=True):
                cur = self._db.execute(
                    "INSERT INTO memories (id, scope, kind, text, source, doc_id, metadata, "
                    "created_at, embed_model, dim, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    row,
                )
                rowid = int(cur.lastrowid or 0)
                rowids.append(rowid)
                self._db.execute(
                    "INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)",
                    (rowid, index_text(text)),
                )
            self._rows = None
            if self._index is not None:
                for i, m in enumerate(items):
                    self._index.add(m.scope.key, [rowids[i]], [m.kind], vectors[i : i + 1])
        return ids

    def delete(self, ids: Sequence[str], *, scopes: Sequence[Scope]) -> int:
        keys = scope_keys(scopes)
        if not ids:
            return 0
        with self._lock:
            rowids: list[int] = []
            for chunk in _chunks(list(ids)):
                rowids += [
                    r[0]
                    for r in self._db.execute(
                        f"SELECT rowid FROM memories WHERE id IN ({_marks(len(chunk))}) "
                        f"AND scope IN ({_marks(len(keys))})",
                        [*chunk, *keys],
                    )
                ]
            return self._delete_rows(rowids)

    def delete_source(self, doc_id: str, *, scope: Scope) -> int:
        with self._lock:
            rowids = [
                r[0]
                for r in self._db.execute(
                    "SELECT rowid FROM memories WHERE scope = ? AND doc_id = ?",
                    (scope.key, doc_id),
                )
            ]
            return self._delete_rows(rowids)

    def _delete_rows(self, rowids: list[int]) -> int:
        with self._transaction():
            for chunk in _chunks(rowids):
                self._db.execute(
                    f"DELETE FROM memories WHERE rowid IN ({_marks(len(chunk))})", chunk
                )
                self._db.execute(
                    f"DELETE FROM memories_fts WHERE rowid IN ({_marks(len(chunk))})", chunk
                )
        if self._index is not None:
            self._index.remove(rowids)
        self._stale = self._rows = None
        return len(rowids)

    def reembed(self, *, batch_size: int = 256) -> int:
        """Rebuild the vectors of every item not embedded with the current model and size."""
        done = 0
        with self._lock:
            while True:
                rows = self._db.execute(
                    "SELECT rowid, text FROM memories WHERE embed_model != ? OR dim != ? LIMIT ?",
                    (self.embed_model, self.dim, batch_size),
                ).fetchall()
                if not rows:
                    break
                vectors = checked_vectors(self.embedder, [r[1] for r in rows])
                with self._transaction():
                    self._db.executemany(
                        "UPDATE memories SET vector = ?, embed_model = ?, dim = ? WHERE rowid = ?",
                        [
                            (vectors[i].tobytes(), self.embed_model, self.dim, r[0])
                            for i, r in enumerate(rows)
                        ],
                    )
                done += len(rows)
            self._index, self._stale = None, 0
        return done

    # -- reads ----------------------------------------------------------------------------
    def _data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _sync(self) -> None:
        """Another process (``xclaw kb add`` beside a running gateway) committed: the
        in-memory index and counts are rebuilt from the file. ``data_version`` changes only
        for other connections' commits, so our own writes keep their incremental updates."""
        version = self._data_version()
        if version != self._version:
            self._version = version
            self._index = self._stale = self._rows = None

    def stale_count(self) -> int:
        with self._lock:
            self._sync()
            if self._stale is None:
                row = self._db.execute(
                    "SELECT count(*) FROM memories WHERE embed_model != ? OR dim != ?",
                    (self.embed_model, self.dim),
                ).fetchone()
                self._stale = int(row[0])
            return self._stale

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[Scope],
        k: int = 5,
        mode: SearchMode = "hybrid",
        kinds: Sequence[str] | None = None,
    ) -> list[Hit]:
        keys = scope_keys(scopes)
        if k <= 0 or not query.strip():
            return []
        n = k * self.weights.candidates if mode == "hybrid" else k
        vector: dict[int, float] = {}
        keyword: dict[int, float] = {}
        if mode != "keyword":
            self.check_embedder()
            q = checked_vectors(self.embedder, [query])[0]
        with self._lock:
            self._sync()
            if mode != "keyword":
                vector = dict(self._vector_index().search(q, keys, n, kinds))
            if mode != "vector":
                keyword = self._keyword(query, keys, n, kinds)
            ranked = blend(vector, keyword, mode, self.weights)[:k]
            items = self._items_by_rowid([r for r, _ in ranked])
        return [
            Hit(items[r], score, vector.get(r), keyword.get(r)) for r, score in ranked if r in items
        ]

    def _keyword(
        self, query: str, keys: list[str], n: int, kinds: Sequence[str] | None
    ) -> dict[int, float]:
        """Up to ``n`` rowids with a keyword score in [0, 1]: BM25 scaled so the best match
        is 1, times the share of the query's terms the item holds (one common word matched
        in a long query must not count as a full match)."""
        expr = match_query(self._informative_terms(keyword_terms(query)))
        if expr is None:
            return {}
        for kind in kinds or ():
            check_kind(kind)
        kind_sql = f" AND m.kind IN ({_marks(len(kinds))})" if kinds is not None else ""
        rows = self._db.execute(
            "SELECT f.rowid, bm25(memories_fts) AS rank, m.text FROM memories_fts f "
            "JOIN memories m ON m.rowid = f.rowid "
            f"WHERE memories_fts MATCH ? AND m.scope IN ({_marks(len(keys))}){kind_sql} "
            "ORDER BY rank LIMIT ?",
            [expr, *keys, *(kinds or []), n],
        ).fetchall()
        if not rows:
            return {}
        best = max(-r[1] for r in rows) or 1.0  # FTS5's bm25 is negative: lower is better
        wanted = set(keyword_terms(query))
        return {int(r[0]): max(-r[1], 0.0) / best * coverage(wanted, r[2]) for r in rows}

    def _informative_terms(self, terms: Sequence[str]) -> list[str]:
        """The query terms worth matching: present in the store, and not in most rows."""
        unique = list(dict.fromkeys(terms))[:64]
        if not unique:
            return []
        df = dict(
            self._db.execute(
                f"SELECT term, doc FROM memories_vocab WHERE term IN ({_marks(len(unique))})",
                unique,
            ).fetchall()
        )
        present = sorted((t for t in unique if df.get(t)), key=lambda t: df[t])
        total = self.count()
        if total < _COMMON_FROM_ROWS:
            return present
        # Only common words: no keyword evidence, the vector side ranks alone.
        return [t for t in present if df[t] <= _COMMON_SHARE * total]

    def _vector_index(self) -> VectorIndex:
        if self._index is None:
            index = VectorIndex(self.dim, prescan_from=self.prescan_from)
            cursor = self._db.execute(
                "SELECT rowid, scope, kind, vector FROM memories "
                "WHERE embed_model = ? AND dim = ? ORDER BY scope",
                (self.embed_model, self.dim),
            )
            while batch := cursor.fetchmany(4096):
                for scope in dict.fromkeys(r[1] for r in batch):
                    part = [r for r in batch if r[1] == scope]
                    vectors = np.frombuffer(b"".join(r[3] for r in part), np.float32)
                    index.add(
                        scope,
                        [r[0] for r in part],
                        [r[2] for r in part],
                        vectors.reshape(len(part), self.dim),
                    )
            index.prepare()
            self._index = index
        return self._index

    def list(
        self,
        *,
        scopes: Sequence[Scope],
        kinds: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryItem]:
        keys = scope_keys(scopes)
        kind_sql = f" AND kind IN ({_marks(len(kinds))})" if kinds is not None else ""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE scope IN ({_marks(len(keys))})"
                f"{kind_sql} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
                [*keys, *(kinds or []), max(limit, 0), max(offset, 0)],
            ).fetchall()
        return [_item(r) for r in rows]

    def get(self, id: str, *, scopes: Sequence[Scope]) -> MemoryItem | None:
        keys = scope_keys(scopes)
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND scope IN ({_marks(len(keys))})",
                [id, *keys],
            ).fetchone()
        return _item(row) if row else None

    def _items_by_rowid(self, rowids: Sequence[int]) -> dict[int, MemoryItem]:
        if not rowids:
            return {}
        rows = self._db.execute(
            f"SELECT rowid, {_COLUMNS} FROM memories WHERE rowid IN ({_marks(len(rowids))})",
            tuple(rowids),
        ).fetchall()
        return {int(r[0]): _item(r[1:]) for r in rows}

    def count(self) -> int:
        with self._lock:
            self._sync()
            if self._rows is None:
                self._rows = int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])
            return self._rows

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._index = None

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _item(row: Sequence[Any]) -> MemoryItem:
    id_, scope, kind, text, source, metadata, created_at, model, dim = row
    return MemoryItem(
        id=id_,
        text=text,
        scope=Scope.parse(scope),
        kind=kind,
        source=json.loads(source) if source else None,
        metadata=json.loads(metadata) if metadata else {},
        created_at=float(created_at),
        embed_model=model,
        dim=int(dim),
    )


K = TypeVar("K", int, str)


def blend(
    vector: dict[K, float], keyword: dict[K, float], mode: SearchMode, weights: HybridWeights
) -> list[tuple[K, float]]:
    """(rowid, score) best first. Hybrid: ``w_v * max(cos, 0) + w_k * bm25_scaled``; a side
    that did not find an item adds 0 for it."""
    if mode == "vector":
        scores = vector
    elif mode == "keyword":
        scores = keyword
    elif mode == "hybrid":
        scores = {
            r: weights.vector * max(vector.get(r, 0.0), 0.0) + weights.keyword * keyword.get(r, 0.0)
            for r in vector.keys() | keyword.keys()
        }
    else:
        raise MemoryStoreError(
            f"unknown search mode {mode!r}", hint="Use hybrid, vector or keyword."
        )
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
