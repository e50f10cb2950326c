"""A session's child sessions (multi-agent workers) with the step that started each.

A child records which orchestrator call started it (``meta.agents.call``: ``CALL_ID|...``);
the parent's ledger maps that call to its step. ``xclaw steps`` and the web UI's step tree
both hang each child under that step.
"""

from __future__ import annotations

from dataclasses import dataclass

from xclaw.store.base import SessionRecord, Store

__all__ = ["ChildLink", "child_links"]


@dataclass(frozen=True, slots=True)
class ChildLink:
    session: SessionRecord
    worker: str
    step_id: str  # the parent's step that started it ("" when unknown: a routed worker)


def child_links(store: Store, session_id: str) -> list[ChildLink]:
    """The children of ``session_id``, oldest first, each with its worker and parent step."""
    children = store.list_children(session_id)
    if not children:
        return []
    by_call = {e.call_id: e.step_id for e in store.load_ledger(session_id)}
    links = []
    for child in children:
        info = child.meta.get("agents") or {}
        call = str(info.get("call") or "").split("|", 1)[0]
        worker = str(info.get("worker") or child.model)
        links.append(ChildLink(child, worker, by_call.get(call, "")))
    return links
