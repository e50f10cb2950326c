"""Long-term memory and retrieval (seed 003 ch. 08): scoped memories, local or remote
embeddings, an embedded SQLite store or Milvus, recall into the system prompt, extraction.

Importing the package is light (the config imports ``xclaw.memory.settings``); the
embedders, which need numpy and httpx, load on first use.
"""

from typing import Any

from xclaw.memory.base import (
    EmbeddingMismatch,
    Hit,
    HybridWeights,
    MemoryItem,
    MemoryScopes,
    MemoryStore,
    MemoryStoreError,
    NewMemory,
    Scope,
    ScopeKind,
    SearchMode,
)

_EMBED_NAMES = (
    "CachedEmbedder",
    "Embedder",
    "EmbeddingError",
    "OpenAIEmbedder",
    "UseMultilingualEmbedder",
    "default_embedder",
)


def __getattr__(name: str) -> Any:
    if name in _EMBED_NAMES:
        from xclaw.memory import embed

        return getattr(embed, name)
    raise AttributeError(f"module 'xclaw.memory' has no attribute {name!r}")


__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingError",
    "EmbeddingMismatch",
    "Hit",
    "HybridWeights",
    "MemoryItem",
    "MemoryScopes",
    "MemoryStore",
    "MemoryStoreError",
    "NewMemory",
    "OpenAIEmbedder",
    "Scope",
    "ScopeKind",
    "SearchMode",
    "UseMultilingualEmbedder",
    "default_embedder",
]
