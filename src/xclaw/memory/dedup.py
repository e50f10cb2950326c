"""Is a fact already remembered? Same normalised text, or a vector very close to it."""

from __future__ import annotations

from xclaw.memory.base import MemoryItem, MemoryStore, Scope, normalised_text


def find_duplicate(
    store: MemoryStore, text: str, scope: Scope, *, similarity: float = 0.92
) -> MemoryItem | None:
    """An existing memory in ``scope`` saying the same as ``text``, or None."""
    wanted = normalised_text(text)
    for hit in store.search(text, scopes=[scope], k=3, mode="vector"):
        if normalised_text(hit.item.text) == wanted:
            return hit.item
        if hit.vector_score is not None and hit.vector_score >= similarity:
            return hit.item
    return None
