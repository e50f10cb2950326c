"""The Milvus memory store: the same ``MemoryStore`` on a Milvus server, or milvus-lite's file.

One collection holds every scope; each search and delete carries a ``scope in [...]`` filter
built from validated scope keys, so nothing crosses scopes. The keyword side is Milvus's own
full-text search (a BM25 function over the ``text`` field, jieba analyzer for Chinese and
English); hybrid results are blended here with the same weights and scaling as the SQLite
store, so both backends rank alike.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

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
from xclaw.memory.sqlite_store import blend, new_id
from xclaw.memory.terms import coverage, keyword_terms

_MAX_TEXT = 20_000
_PAGE = 1_000
_LIST_CAP = 16_384  # Milvus cannot sort a query; list sorts at most this many rows here
_FIELDS = ["id", "scope", "kind", "text", "source", "metadata", "created_at", "embed_model", "dim"]


def _literal(value: str) -> str:
    """A Milvus string literal (JSON quoting; non-ASCII kept as it is)."""
    return json.dumps(value, ensure_ascii=False)


def _quoted(values: Sequence[str]) -> str:
    return "[" + ",".join(_literal(v) for v in values) + "]"


def _kinds_filter(kinds: Sequence[str] | None) -> str:
    if kinds is None:
        return ""
    for kind in kinds:
        check_kind(kind)
    return f" and kind in {_quoted(list(kinds))}"


class MilvusMemoryStore(MemoryStore):
    def __init__(
        self,
        uri: str,
        embedder: Embedder,
        *,
        collection: str = "xclaw_memory",
        token: str | None = None,
        weights: HybridWeights | None = None,
    ) -> None:
        from pymilvus import MilvusClient  # type: ignore[import-untyped]

        self.embedder = embedder
        self.embed_model = embedder.name
        self.dim = embedder.dim
        self.weights = weights or HybridWeights()
        self.collection = collection
        self._lock = threading.RLock()
        self._client = MilvusClient(uri=uri, token=token or "")
        self._collection_dim = self._ensure_collection()
        # Counting scans the collection (seconds at 10k rows in milvus-lite): both counts are
        # kept here and dropped by whatever changes them. Saves only add current-model rows.
        self._rows: int | None = None
        self._stale: int | None = None

    # -- schema ---------------------------------------------------------------------------
    def _ensure_collection(self) -> int:
        client = self._client
        if client.has_collection(self.collection):
            info = client.describe_collection(self.collection)
            for f in info.get("fields", []):
                if f.get("name") == "vector":
                    return int(f.get("params", {}).get("dim", self.dim))
            raise MemoryStoreError(f"collection {self.collection} has no vector field")
        self._create_collection(self.dim)
        return self.dim

    def _create_collection(self, dim: int) -> None:
        from pymilvus import DataType, Function, FunctionType

        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("scope", DataType.VARCHAR, max_length=256)
        schema.add_field("kind", DataType.VARCHAR, max_length=64)
        schema.add_field(
            "text",
            DataType.VARCHAR,
            max_length=_MAX_TEXT * 4,  # bytes: UTF-8 takes up to 4 per character
            enable_analyzer=True,
            analyzer_params={"tokenizer": "jieba"},
        )
        schema.add_field("source", DataType.VARCHAR, max_length=4096)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=512)
        schema.add_field("metadata", DataType.VARCHAR, max_length=8192)
        schema.add_field("created_at", DataType.DOUBLE)
        schema.add_field("embed_model", DataType.VARCHAR, max_length=256)
        schema.add_field("dim", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = self._client.prepare_index_params()
        index.add_index("vector", index_type="FLAT", metric_type="IP")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        self._client.create_collection(self.collection, schema=schema, index_params=index)

    # -- writes ---------------------------------------------------------------------------
    def save(self, items: Sequence[NewMemory]) -> list[str]:
        if not items:
            return []
        texts = [check_text(m.text, _MAX_TEXT) for m in items]
        vectors = checked_vectors(self.embedder, texts)
        now = time.time()
        ids = [new_id() for _ in items]
        rows = [
            {
                "id": ids[i],
                "scope": m.scope.key,
                "kind": check_kind(m.kind),
                "text": texts[i],
                "source": json.dumps(m.source, ensure_ascii=False) if m.source else "",
                "doc_id": str((m.source or {}).get("doc_id") or ""),
                "metadata": json.dumps(m.metadata, ensure_ascii=False, default=str),
                "created_at": now,
                "embed_model": self.embed_model,
                "dim": self.dim,
                "vector": vectors[i].tolist(),
            }
            for i, m in enumerate(items)
        ]
        with self._lock:
            if self._collection_dim != self.dim:
                raise self._mismatch(self.count())
            for start in range(0, len(rows), _PAGE):
                self._client.insert(self.collection, rows[start : start + _PAGE])
            # Sealed segments are indexed: an unflushed growing one is searched by brute force.
            self._client.flush(self.collection)
            self._rows = None
        return ids

    def delete(self, ids: Sequence[str], *, scopes: Sequence[Scope]) -> int:
        keys = scope_keys(scopes)
        if not ids:
            return 0
        expr = f"id in {_quoted(list(ids))} and scope in {_quoted(keys)}"
        return self._delete_where(expr)

    def delete_source(self, doc_id: str, *, scope: Scope) -> int:
        return self._delete_where(
            f"scope == {_literal(scope.key)} and doc_id == {_literal(doc_id)}"
        )

    def _delete_where(self, expr: str) -> int:
        with self._lock:
            found = [r["id"] for r in self._query(expr, ["id"])]
            if found:
                self._client.delete(self.collection, filter=f"id in {_quoted(found)}")
                self._rows = self._stale = None
            return len(found)

    def reembed(self, *, batch_size: int = 256) -> int:
        """Rebuild stale vectors. A change of size needs a new collection: every vector is
        computed first, so a failing embedder leaves the old collection as it was."""
        with self._lock:
            resize = self._collection_dim != self.dim
            expr = (
                "id != ''"
                if resize
                else f"embed_model != {_literal(self.embed_model)} or dim != {self.dim}"
            )
            rows = self._query(expr, [*_FIELDS, "doc_id"])
            fresh: list[dict[str, Any]] = []
            for start in range(0, len(rows), batch_size):
                batch = rows[start : start + batch_size]
                vectors = checked_vectors(self.embedder, [r["text"] for r in batch])
                fresh += [
                    {
                        **{k: r[k] for k in [*_FIELDS, "doc_id"]},
                        "embed_model": self.embed_model,
                        "dim": self.dim,
                        "vector": vectors[i].tolist(),
                    }
                    for i, r in enumerate(batch)
                ]
            if resize:
                self._client.drop_collection(self.collection)
                self._create_collection(self.dim)
                self._collection_dim = self.dim
            for start in range(0, len(fresh), _PAGE):
                self._client.upsert(self.collection, fresh[start : start + _PAGE])
            self._client.flush(self.collection)
            self._rows = self._stale = None
            return len(rows)

    # -- reads ----------------------------------------------------------------------------
    def stale_count(self) -> int:
        with self._lock:
            if self._collection_dim != self.dim:
                return self.count()
            if self._stale is None:
                expr = f"embed_model != {_literal(self.embed_model)} or dim != {self.dim}"
                self._stale = self._count(expr)
            return self._stale

    def _mismatch(self, n: int) -> MemoryStoreError:
        from xclaw.memory.base import EmbeddingMismatch

        return EmbeddingMismatch(
            f"{n} stored memories were embedded with another model or size than "
            f"{self.embed_model} ({self.dim} dimensions)",
            hint="Run `xclaw memory reembed` to rebuild them with the current model.",
        )

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
        expr = f"scope in {_quoted(keys)}{_kinds_filter(kinds)}"
        n = k * self.weights.candidates if mode == "hybrid" else k
        vector: dict[str, float] = {}
        keyword: dict[str, float] = {}
        rows: dict[str, dict[str, Any]] = {}
        with self._lock:
            if mode != "keyword":
                self.check_embedder()
                q = checked_vectors(self.embedder, [query])[0].tolist()
                for hit in self._search([q], "vector", expr, n):
                    vector[hit["id"]] = float(hit["distance"])
                    rows[hit["id"]] = hit["entity"]
            if mode != "vector":
                keyword = self._keyword(query, expr, n, rows)
        ranked = blend(vector, keyword, mode, self.weights)[:k]
        return [
            Hit(_item(rows[r]), s, vector.get(r), keyword.get(r)) for r, s in ranked if r in rows
        ]

    def _keyword(
        self, query: str, expr: str, n: int, rows: dict[str, dict[str, Any]]
    ) -> dict[str, float]:
        if not keyword_terms(query):
            return {}
        hits = self._search([query], "sparse", expr, n)
        if not hits:
            return {}
        # milvus-lite reports BM25 relevance negated; the magnitude is the relevance.
        relevance = {h["id"]: abs(float(h["distance"])) for h in hits}
        best = max(relevance.values()) or 1.0
        wanted = set(keyword_terms(query))
        out = {}
        for h in hits:
            rows.setdefault(h["id"], h["entity"])
            out[h["id"]] = relevance[h["id"]] / best * coverage(wanted, h["entity"]["text"])
        return out

    def _search(self, data: list[Any], field: str, expr: str, n: int) -> list[dict[str, Any]]:
        result = self._client.search(
            self.collection,
            data=data,
            anns_field=field,
            limit=n,
            filter=expr,
            output_fields=_FIELDS,
        )
        return list(result[0]) if result else []

    def _query(self, expr: str, fields: list[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        iterator = self._client.query_iterator(
            self.collection, batch_size=_PAGE, filter=expr, output_fields=fields
        )
        try:
            while batch := iterator.next():
                out.extend(batch)
        finally:
            iterator.close()
        return out

    def _count(self, expr: str) -> int:
        rows = self._client.query(self.collection, filter=expr, output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def count(self) -> int:
        with self._lock:
            if self._rows is None:
                self._rows = self._count("id != ''")
            return self._rows

    def list(
        self,
        *,
        scopes: Sequence[Scope],
        kinds: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryItem]:
        keys = scope_keys(scopes)
        expr = f"scope in {_quoted(keys)}{_kinds_filter(kinds)}"
        with self._lock:
            rows = self._client.query(
                self.collection, filter=expr, output_fields=_FIELDS, limit=_LIST_CAP
            )
        rows.sort(key=lambda r: (-float(r["created_at"]), r["id"]))
        return [_item(r) for r in rows[max(offset, 0) : max(offset, 0) + max(limit, 0)]]

    def get(self, id: str, *, scopes: Sequence[Scope]) -> MemoryItem | None:
        keys = scope_keys(scopes)
        expr = f"id == {_literal(id)} and scope in {_quoted(keys)}"
        with self._lock:
            rows = self._client.query(self.collection, filter=expr, output_fields=_FIELDS)
        return _item(rows[0]) if rows else None

    def close(self) -> None:
        with self._lock:
            self._client.close()


def _item(row: dict[str, Any]) -> MemoryItem:
    return MemoryItem(
        id=str(row["id"]),
        text=str(row["text"]),
        scope=Scope.parse(str(row["scope"])),
        kind=str(row["kind"]),
        source=json.loads(row["source"]) if row.get("source") else None,
        metadata=json.loads(row["metadata"]) if row.get("metadata") else {},
        created_at=float(row["created_at"]),
        embed_model=str(row["embed_model"]),
        dim=int(row["dim"]),
    )
