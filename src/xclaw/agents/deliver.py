"""``deliver``: how a worker ends its run with a summary, small data and artifact pointers.

The parent's tool result holds these three only, never the child's transcript. Pointers are
checked when delivered: each is a path inside the worker's workspace (stored absolute, so the
parent can open it wherever it runs) or an id such as ``session:ID``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from xclaw.core.errors import EndRun, ToolArgumentsInvalid
from xclaw.core.messages import ToolResult
from xclaw.core.state import RunState, ToolCallRecord
from xclaw.store.base import Store
from xclaw.store.transcript import items_to_messages
from xclaw.tools.base import Tool, ToolContext, tool

MAX_SUMMARY = 4_000
MAX_DATA_BYTES = 8_000
MAX_POINTERS = 32
DELIVER_NAME = "deliver"
_ID_POINTER = re.compile(r"^(session|step|artifact):[A-Za-z0-9._:-]{1,200}$")


@dataclass(frozen=True, slots=True)
class Delivery:
    summary: str
    data: dict[str, Any] = field(default_factory=dict)
    pointers: dict[str, str] = field(default_factory=dict)
    delivered: bool = True  # False: the worker answered in text instead of calling deliver
    status: Literal["success", "error"] = "success"  # "error": the worker could not do it

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "summary": self.summary,
            "summary_data": self.data,
            "artifact_pointers": self.pointers,
            "delivered": self.delivered,
        }

    def as_input(self) -> str:
        """How a pipeline's next step sees this delivery in place of ``{{input}}``."""
        parts = [self.summary]
        if self.data:
            parts.append("data: " + json.dumps(self.data, ensure_ascii=False))
        if self.pointers:
            parts.append(
                "artifacts: " + ", ".join(f"{k}={v}" for k, v in sorted(self.pointers.items()))
            )
        return "\n".join(parts)


@tool("deliver", timeout_s=10.0)
def deliver(
    ctx: ToolContext,
    summary: Annotated[str, Field(min_length=1, max_length=MAX_SUMMARY)],
    summary_data: dict[str, Any] | None = None,
    artifact_pointers: dict[str, str] | None = None,
    status: Literal["success", "error"] = "success",
) -> ToolResult:
    """Finish your work and hand the result to the agent that asked for it. Ends your run.

    Args:
        summary: What you did or found and what the caller should do next (a few sentences).
        summary_data: Small structured facts (flags, scores, issues, file names); no file bodies.
        artifact_pointers: Name -> path of a file you wrote (inside your workspace) or an id.
        status: "error" when you could not do the task (say why in the summary).
    """
    data = summary_data or {}
    encoded = json.dumps(data, ensure_ascii=False, default=str)
    if len(encoded.encode()) > MAX_DATA_BYTES:
        raise ToolArgumentsInvalid(
            f"summary_data is {len(encoded.encode())} bytes; the limit is {MAX_DATA_BYTES}.",
            hint="Keep summary_data small: write long content to a file and point to it.",
        )
    pointers = artifact_pointers or {}
    if len(pointers) > MAX_POINTERS:
        raise ToolArgumentsInvalid(
            f"{len(pointers)} artifact pointers; the limit is {MAX_POINTERS}.",
            hint="Point to a folder or an index file instead.",
        )
    checked: dict[str, str] = {}
    for name, raw in pointers.items():
        if _ID_POINTER.match(raw):
            checked[name] = raw
            continue
        # Raises PolicyDenied (a coded failure the worker reads) outside the workspace.
        resolved = ctx.resolve(raw, must_exist=True)
        checked[name] = str(resolved.path)
    return ToolResult.success(
        "Delivered; your run ends here.",
        summary=summary,
        summary_data=data,
        artifact_pointers=checked,
        status=status,
    )


def deliver_tool() -> Tool:
    return deliver


async def end_on_delivery(state: RunState, records: list[ToolCallRecord]) -> None:
    """``after_tools`` hook: a successful ``deliver`` ends the worker's run as completed."""
    for rec in records:
        if rec.name == DELIVER_NAME and rec.result.ok:
            raise EndRun(
                "the worker delivered its result",
                code="DELIVERED",
                status="completed",
                reply=str(rec.result.data.get("summary", "")),
            )


def _from_result(result: ToolResult) -> Delivery:
    data = result.data
    return Delivery(
        str(data.get("summary", "")),
        dict(data.get("summary_data") or {}),
        {str(k): str(v) for k, v in (data.get("artifact_pointers") or {}).items()},
        status="error" if data.get("status") == "error" else "success",
    )


def delivery_from_records(records: list[ToolCallRecord], reply: str) -> Delivery:
    """The last successful ``deliver`` of a run; else the final answer as the summary."""
    for rec in reversed(records):
        if rec.name == DELIVER_NAME and rec.result.ok:
            return _from_result(rec.result)
    return Delivery(reply.strip()[:MAX_SUMMARY], delivered=False)


def delivery_from_store(store: Store, session_id: str) -> Delivery:
    """The same for a child that finished in an earlier process (read from its ledger)."""
    for entry in reversed(store.load_ledger(session_id)):
        if entry.name == DELIVER_NAME and entry.result and entry.result.get("ok"):
            return _from_result(ToolResult.from_dict(entry.result))
    messages = items_to_messages(i.payload for i in store.load_items(session_id))
    last = next((m.text for m in reversed(messages) if m.role == "assistant" and m.text), "")
    return Delivery(last.strip()[:MAX_SUMMARY], delivered=False)
