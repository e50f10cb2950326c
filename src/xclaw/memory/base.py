"""The memory vocabulary and the one ``MemoryStore`` interface every backend implements.

A memory belongs to exactly one scope (a user, a project or a session). Every read and delete
names the scopes it may see, and a backend never returns or removes anything outside them.
Every vector is stored with the embedding model's name and size; a store opened with another
model refuses to search until ``reembed`` has rebuilt the vectors (never a silent mix).
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from xclaw.core.errors import XclawError

ScopeKind = Literal["user", "project", "session"]
MemoryKind = Literal["fact", "preference"]
FACT: MemoryKind = "fact"
PREFERENCE: MemoryKind = "preference"  # how the user wants work done: recalled every time
SearchMode = Literal["hybrid", "vector", "keyword"]
SCOPE_KINDS: tuple[ScopeKind, ...] = ("user", "project", "session")
# Any printable text but quotes and backslashes (ids are quoted into Milvus filters).
_SCOPE_ID = re.compile(r"^[^\x00-\x1f\x7f\"'\\]{1,400}$")


class MemoryStoreError(XclawError):
    code = "MEMORY_ERROR"


class EmbeddingMismatch(MemoryStoreError):
    """The store holds vectors of another model or size than the embedder in use."""

    code = "MEMORY_EMBEDDING_MISMATCH"


@dataclass(frozen=True, slots=True)
class Scope:
    kind: ScopeKind
    id: str

    def __post_init__(self) -> None:
        if self.kind not in SCOPE_KINDS:
            raise MemoryStoreError(
                f"unknown memory scope kind {self.kind!r}",
                code="MEMORY_SCOPE_INVALID",
                hint="Use user, project or session.",
            )
        if not _SCOPE_ID.match(self.id):
            raise MemoryStoreError(
                f"memory scope id {self.id!r} is empty, too long, or holds a quote, a "
                "backslash or a control character",
                code="MEMORY_SCOPE_INVALID",
                hint="Use another id (a project's scope falls back to a hash of its path).",
            )

    @property
    def key(self) -> str:
        """One string naming the scope, as stored in every backend."""
        return f"{self.kind}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        kind, sep, ident = text.partition(":")
        if not sep:
            raise MemoryStoreError(
                f"{text!r} is not a scope",
                code="MEMORY_SCOPE_INVALID",
                hint="Write it as kind:id, e.g. user:alice or project:/home/me/proj.",
            )
        return cls(kind, ident)  # type: ignore[arg-type]  # validated in __post_init__


@dataclass(frozen=True, slots=True)
class NewMemory:
    text: str
    scope: Scope
    kind: str = "fact"  # "fact" | "preference" | "chunk" | "kb_doc"
    source: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemoryItem:
    id: str
    text: str
    scope: Scope
    kind: str
    source: dict[str, Any] | None
    metadata: dict[str, Any]
    created_at: float
    embed_model: str
    dim: int


@dataclass(frozen=True, slots=True)
class Hit:
    item: MemoryItem
    score: float
    vector_score: float | None
    keyword_score: float | None


@dataclass(frozen=True, slots=True)
class HybridWeights:
    """OpenClaw-style blend: ``vector * sim + keyword * bm25``, each normalised to [0, 1]."""

    vector: float = 0.7
    keyword: float = 0.3
    candidates: int = 4  # each side contributes ``k * candidates`` before the blend


def scope_keys(scopes: Sequence[Scope]) -> list[str]:
    if not scopes:
        raise MemoryStoreError(
            "a memory operation named no scope",
            code="MEMORY_SCOPE_REQUIRED",
            hint="Pass the user, project or session scopes the caller may see.",
        )
    return sorted({s.key for s in scopes})


def normalised_text(text: str) -> str:
    """Text compared for duplicates: NFKC, case-folded, punctuation and spaces removed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


_KIND = re.compile(r"^[\w.\-]{1,40}$")


def check_kind(kind: str) -> str:
    """A kind is a short word (it is matched in filters, never free text)."""
    if not _KIND.match(kind):
        raise MemoryStoreError(
            f"memory kind {kind!r} is not a short word", code="MEMORY_KIND_INVALID"
        )
    return kind


def check_text(text: str, max_chars: int = 20_000) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise MemoryStoreError("a memory cannot be empty", code="MEMORY_TEXT_INVALID")
    if len(cleaned) > max_chars:
        raise MemoryStoreError(
            f"a memory is {len(cleaned)} characters, more than {max_chars}",
            code="MEMORY_TEXT_INVALID",
            hint="Save a shorter fact, or index the document with `xclaw kb add`.",
        )
    return cleaned


class MemoryStore(ABC):
    """Save, search, list and delete scoped memories."""

    embed_model: str
    dim: int

    @abstractmethod
    def save(self, items: Sequence[NewMemory]) -> list[str]:
        """Embed (in batches) and store; returns the new ids in order."""

    @abstractmethod
    def search(
        self,
        query: str,
        *,
        scopes: Sequence[Scope],
        k: int = 5,
        mode: SearchMode = "hybrid",
        kinds: Sequence[str] | None = None,
    ) -> list[Hit]:
        """The best ``k`` memories within ``scopes``, best first."""

    @abstractmethod
    def delete(self, ids: Sequence[str], *, scopes: Sequence[Scope]) -> int:
        """Remove the given ids that lie within ``scopes``; returns how many went."""

    @abstractmethod
    def delete_source(self, doc_id: str, *, scope: Scope) -> int:
        """Remove every item whose ``source["doc_id"]`` is ``doc_id`` in ``scope``."""

    @abstractmethod
    def list(
        self,
        *,
        scopes: Sequence[Scope],
        kinds: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """Items within ``scopes``, newest first."""

    @abstractmethod
    def get(self, id: str, *, scopes: Sequence[Scope]) -> MemoryItem | None:
        """One item, or None when it does not exist or lies outside ``scopes``."""

    @abstractmethod
    def reembed(self, *, batch_size: int = 256) -> int:
        """Rebuild every vector with the current embedder; returns how many items."""

    @abstractmethod
    def stale_count(self) -> int:
        """Items whose vectors came from another model or size than the current embedder."""

    @abstractmethod
    def count(self) -> int:
        """Items stored, in every scope (cheap: recall skips an empty store)."""

    @abstractmethod
    def close(self) -> None: ...

    def check_embedder(self) -> None:
        """Refuse to search while any vector came from another embedder."""
        stale = self.stale_count()
        if stale:
            raise EmbeddingMismatch(
                f"{stale} stored memories were embedded with another model than "
                f"{self.embed_model} ({self.dim} dimensions); searching would mix "
                "incomparable vectors",
                hint="Run `xclaw memory reembed` to rebuild them with the current model.",
            )


@dataclass(frozen=True, slots=True)
class MemoryScopes:
    """The scopes one run may see: always a user; a project and a session when known.
    Saving defaults to the user scope; recall searches all of them."""

    user: Scope
    project: Scope | None = None
    session: Scope | None = None

    @property
    def visible(self) -> list[Scope]:
        return [s for s in (self.user, self.project, self.session) if s is not None]

    def with_session(self, session_id: str | None) -> MemoryScopes:
        """These scopes with the session of the run at hand (kept as they are when there is
        none, or the id cannot name a scope)."""
        if not session_id or (self.session is not None and self.session.id == session_id):
            return self
        try:
            session = Scope("session", session_id)
        except MemoryStoreError:
            return self
        return MemoryScopes(self.user, self.project, session)

    def pick(self, kind: ScopeKind) -> Scope:
        scope = {"user": self.user, "project": self.project, "session": self.session}.get(kind)
        if scope is None:
            raise MemoryStoreError(
                f"this run has no {kind} memory scope",
                code="MEMORY_SCOPE_UNAVAILABLE",
                hint="Save to the user scope instead.",
            )
        return scope
