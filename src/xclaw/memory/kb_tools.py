"""``kb.search``: the knowledge base as a read-only tool that answers with citations.

The passages come back numbered with a citation each (``path:12-18``, ``path#page=3``,
``path#anchor``, ``path#chunk=4``) and the heading path they lie under, so the model can
quote the source of what it says. Embedding the query runs in a worker thread: the loop
keeps serving events meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import Field

from xclaw.core.messages import ToolResult
from xclaw.core.tooling import Risk
from xclaw.memory.base import MemoryStoreError
from xclaw.memory.kb import KnowledgeBase, Passage
from xclaw.tools.base import Tool, tool

PASSAGE_CAP = 1_500  # characters of one passage shown to the model


def render_passages(passages: list[Passage]) -> str:
    if not passages:
        return "No passage in the knowledge base matches."
    blocks = []
    for i, p in enumerate(passages, start=1):
        heading = f" § {p.section}" if p.section else ""
        text = p.text if len(p.text) <= PASSAGE_CAP else p.text[:PASSAGE_CAP] + " …"
        blocks.append(f"[{i}] {p.citation}{heading}\n{text}")
    return "\n\n".join(blocks)


def kb_search_tool(kb: KnowledgeBase) -> Tool:
    """``kb.search`` bound to one knowledge base."""

    @tool("kb.search", risk=Risk.READ, timeout_s=120.0, output_cap=24_000)
    async def kb_search(
        query: Annotated[str, Field(min_length=1, max_length=2_000)],
        k: Annotated[int, Field(ge=1, le=20)] = 5,
        mode: Literal["hybrid", "vector", "keyword"] = "hybrid",
    ) -> ToolResult:
        """Search the user's indexed documents; each passage comes with its citation.

        Quote the citation (path:line, path#page=N) of every passage you rely on.

        Args:
            query: What to look for, in any language; a question or keywords.
            k: How many passages to return (1-20).
            mode: hybrid (default), vector (meaning only) or keyword (exact words only).
        """
        try:
            found = await asyncio.to_thread(kb.search, query, k, mode=mode)
        except MemoryStoreError as err:
            return ToolResult.failure(
                err.code, err.message, hint=err.hint or "Check the memory configuration."
            )
        return ToolResult.success(
            render_passages(found), passages=[p.as_dict() for p in found], count=len(found)
        )

    return kb_search


__all__ = ["kb_search_tool", "render_passages"]
