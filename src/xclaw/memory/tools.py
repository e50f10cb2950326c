"""The model's memory tools: ``memory.save`` and ``memory.forget`` (writes under the
policy, recorded in the tool ledger) and ``memory.search`` (read-only).

Tools are built by ``memory_tools(store, scopes)``: the scopes are fixed by the caller,
never by the model, so a model can only reach the memories of its own user, project and
session. The session is the one of the run making the call (``ToolContext.session_id``), so
one set of tools serves every session of a gateway; ``scopes.session`` is the fallback
outside a run.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import Field

from xclaw.core.errors import XclawError
from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.memory.base import FACT, PREFERENCE, MemoryKind, MemoryScopes, MemoryStore, NewMemory
from xclaw.memory.dedup import find_duplicate
from xclaw.redact import redact
from xclaw.tools.base import Tool, ToolContext, tool

_TEXT_MAX = 2_000


def _failure(err: XclawError) -> ToolResult:
    return ToolResult.failure(err.code, err.message, hint=err.hint)


def memory_tools(
    store: MemoryStore, scopes: MemoryScopes, *, duplicate_similarity: float = 0.92
) -> list[Tool]:
    """``memory.save``, ``memory.search`` and ``memory.forget`` bound to ``store`` and
    ``scopes``."""

    def now(ctx: ToolContext) -> MemoryScopes:
        return scopes.with_session(ctx.session_id or None)

    @tool("memory.save", risk=Risk.WRITE, timeout_s=60)
    async def save(
        ctx: ToolContext,
        text: Annotated[str, Field(min_length=3, max_length=_TEXT_MAX)],
        scope: Literal["user", "project", "session"] = "user",
        kind: MemoryKind = FACT,
    ) -> ToolResult:
        """Save a durable fact to long-term memory so later sessions recall it: the user's
        preferences, their stack and style, project background, decisions taken. Write one
        to three sentences that make sense on their own.

        Args:
            text: The fact, complete and self-contained.
            scope: user (default: about the user, every project), project (this project
                only) or session (this conversation only).
            kind: preference for how the user wants work done (languages, style, tools,
                format): recalled in every later session; fact (default) for anything else,
                recalled when it relates to the request.
        """
        text = redact(text)  # a memory is shown, exported and recalled: never a secret
        visible = now(ctx)
        try:
            target = visible.pick(scope)
            same = await asyncio.to_thread(
                find_duplicate, store, text, target, similarity=duplicate_similarity
            )
            if same is not None:
                return ToolResult.success(
                    f"Already remembered as {same.id}: {same.text}", id=same.id, duplicate=True
                )
            session_id = visible.session.id if visible.session else None
            meta = {"origin": "tool", "session_id": session_id}
            ids = await asyncio.to_thread(
                store.save, [NewMemory(text, target, kind, metadata=meta)]
            )
        except XclawError as err:
            return _failure(err)
        return ToolResult.success(f"Saved {kind} {ids[0]}.", id=ids[0], scope=target.key, kind=kind)

    @tool("memory.search", risk=Risk.READ, timeout_s=60)
    async def search(
        ctx: ToolContext,
        query: Annotated[str, Field(min_length=1, max_length=_TEXT_MAX)],
        k: Annotated[int, Field(ge=1, le=20)] = 5,
    ) -> ToolResult:
        """Search long-term memory (relevant memories are already recalled into the system
        prompt; use this to look for something specific).

        Args:
            query: What to look for, in any language.
            k: How many results to return (1-20).
        """
        try:
            hits = await asyncio.to_thread(
                store.search, query, scopes=now(ctx).visible, k=k, kinds=[FACT, PREFERENCE]
            )
        except XclawError as err:
            return _failure(err)
        results = [
            {
                "id": h.item.id,
                "text": h.item.text,
                "scope": h.item.scope.kind,
                "kind": h.item.kind,
                "score": round(h.score, 3),
            }
            for h in hits
        ]
        if not results:
            return ToolResult.success("No memory matches.", results=[])
        return ToolResult.success(f"{len(results)} memories found.", results=results)

    @tool("memory.forget", risk=Risk.WRITE, timeout_s=60)
    async def forget(
        ctx: ToolContext, id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
    ) -> ToolResult:
        """Delete one memory that is wrong or outdated (ids come from memory.search).

        Args:
            id: The memory's id.
        """
        try:
            removed = await asyncio.to_thread(store.delete, [id], scopes=now(ctx).visible)
        except XclawError as err:
            return _failure(err)
        if not removed:
            return ToolResult.failure(
                "MEMORY_NOT_FOUND",
                f"There is no memory {id} this run can see.",
                hint="Find the id with memory.search.",
            )
        return ToolResult.success(f"Forgot memory {id}.", id=id)

    return [save, search, forget]
