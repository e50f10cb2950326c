"""Memory configuration (``memory:`` in xclaw.yaml) and ``open_memory_store``.

memory:
  backend: sqlite            # or milvus
  embedder: {provider: local}   # or {provider: openai, model: ..., base_url: ..., dim: ...}
  milvus: {uri: http://milvus:19530, token_env: MILVUS_TOKEN}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from xclaw.config import (
    EmbedderConfig,
    ExtractConfig,
    MemoryConfig,
    MilvusConfig,
    RecallConfig,
)
from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir
from xclaw.memory.base import HybridWeights, MemoryStore
from xclaw.redact import register_secret

__all__ = [
    "EmbedderConfig",
    "ExtractConfig",
    "MemoryConfig",
    "MilvusConfig",
    "RecallConfig",
    "memory_config",
    "open_memory_store",
]

if TYPE_CHECKING:
    from xclaw.memory.embed import Embedder


def memory_dir() -> Path:
    path = data_dir() / "memory"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def memory_config(config: object | None) -> MemoryConfig:
    """The memory section of an ``XclawConfig`` (or a ``MemoryConfig`` itself)."""
    if config is None:
        return MemoryConfig()
    if isinstance(config, MemoryConfig):
        return config
    section = getattr(config, "memory", None)
    if isinstance(section, MemoryConfig):
        return section
    if isinstance(section, dict):
        return MemoryConfig.model_validate(section)
    return MemoryConfig()


def make_embedder(config: EmbedderConfig, cache_dir: Path | None = None) -> Embedder:
    from xclaw.memory.embed import CachedEmbedder, OpenAIEmbedder, default_embedder

    inner: Embedder
    if config.provider == "local":
        inner = default_embedder()
    else:
        inner = OpenAIEmbedder(config.base_url, config.model, config.api_key_env, config.dim)
    if not config.cache:
        return inner
    return CachedEmbedder(inner, (cache_dir or memory_dir()) / "embedding-cache.db")


def open_memory_store(
    config: object | None = None, *, embedder: Embedder | None = None
) -> MemoryStore:
    """The store the configuration chooses, with its embedder (cached by default)."""
    cfg = memory_config(config)
    base = Path(os.path.expanduser(cfg.path)).parent if cfg.path else memory_dir()
    emb = embedder or make_embedder(cfg.embedder, base)
    weights = HybridWeights(cfg.vector_weight, cfg.keyword_weight)
    if cfg.backend == "sqlite":
        from xclaw.memory.sqlite_store import SqliteMemoryStore

        path = Path(os.path.expanduser(cfg.path)) if cfg.path else base / "memory.db"
        return SqliteMemoryStore(path, emb, weights=weights)
    if cfg.backend == "milvus":
        from xclaw.memory.milvus_store import MilvusMemoryStore

        uri = cfg.milvus.uri or str(base / "milvus.db")
        token = os.environ.get(cfg.milvus.token_env, "") if cfg.milvus.token_env else ""
        register_secret(token)
        return MilvusMemoryStore(
            uri,
            emb,
            collection=cfg.milvus.collection,
            token=token or None,
            weights=weights,
        )
    raise ConfigError(f"unknown memory backend {cfg.backend!r}", hint="Use sqlite or milvus.")
