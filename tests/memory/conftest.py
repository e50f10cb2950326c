"""Memory test fixtures: the real local embedder, stores of both backends on temp files."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from xclaw.coding.agent import Agent
from xclaw.core.model import Model
from xclaw.memory.base import MemoryStore
from xclaw.memory.embed import Embedder, UseMultilingualEmbedder, Vectors, default_embedder
from xclaw.memory.runtime import MemoryRuntime

_collections = itertools.count()


class CountingEmbedder:
    """The real local model, counting the texts it embeds (to see what a cache saves)."""

    def __init__(self, inner: Embedder, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += list(texts)
        return self.inner.embed(texts)


class TruncatedEmbedder:
    """Another embedding size: the local model's first ``dim`` components, renormalised."""

    def __init__(self, inner: Embedder, dim: int) -> None:
        self.inner = inner
        self.name = f"{inner.name}-first{dim}"
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        head = self.inner.embed(texts)[:, : self.dim]
        return (head / np.linalg.norm(head, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="session")
def local_embedder() -> UseMultilingualEmbedder:
    return default_embedder()


@pytest.fixture(scope="module")
def milvus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("milvus") / "memory.db"


StoreFactory = Callable[..., MemoryStore]


def _factories(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreFactory]:
    opened: list[MemoryStore] = []
    collection = f"t{next(_collections)}"

    def factory(embedder: Embedder | None = None) -> MemoryStore:
        emb = embedder or local_embedder
        store: MemoryStore
        if backend == "sqlite":
            from xclaw.memory.sqlite_store import SqliteMemoryStore

            store = SqliteMemoryStore(tmp_path / "memory.db", emb)
        else:
            from xclaw.memory.milvus_store import MilvusMemoryStore

            file = request.getfixturevalue("milvus_file")
            store = MilvusMemoryStore(str(file), emb, collection=collection)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture(params=["sqlite", "milvus"])
def open_store(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreFactory]:
    """``open_store(embedder=None)`` -> a store of the parametrised backend; every call in one
    test opens the same data (to reopen it with another embedder)."""
    yield from _factories(request.param, request, tmp_path, local_embedder)


@pytest.fixture
def open_sqlite(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: Embedder
) -> Iterator[StoreFactory]:
    """``open_store`` for behaviour above the store, tested once (on the default backend)."""
    yield from _factories("sqlite", request, tmp_path, local_embedder)


def memory_agent(model: Model, root: Path, memory: MemoryRuntime) -> Agent:
    """A coding agent with ``memory``'s tools and hooks, approving everything, no gate."""
    return Agent(
        model,
        root,
        tools=memory.tools(),
        hooks=memory.hooks(),
        approval="allow",
        evidence_gate_enabled=False,
    )
