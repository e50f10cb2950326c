"""Loop hooks: how faces extend the one loop without copying it.

- ``before_model_call(state)``: inject context (page snapshots, reminders) before each call.
- ``after_tools(state, records)``: observe a finished batch of tool calls.
- ``completion_gate(state) -> str | None``: refuse a final answer with a reminder.
- ``request_view(state, messages) -> messages``: what the model is sent this turn, built from
  the conversation (the page agent sends compact round messages instead of the history). Views
  chain in order; with none, the model gets ``state.messages`` itself, uncopied.

Any hook may end the run early by raising ``xclaw.core.errors.EndRun``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xclaw.core.messages import Message
    from xclaw.core.state import RunState, ToolCallRecord

BeforeModelCall = Callable[["RunState"], Awaitable[None] | None]
AfterTools = Callable[["RunState", "list[ToolCallRecord]"], Awaitable[None] | None]
CompletionGate = Callable[["RunState"], str | None]
RequestView = Callable[["RunState", "Sequence[Message]"], "Sequence[Message]"]


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


@dataclass(slots=True)
class Hooks:
    before_model_call: list[BeforeModelCall] = field(default_factory=list)
    after_tools: list[AfterTools] = field(default_factory=list)
    completion_gate: list[CompletionGate] = field(default_factory=list)
    request_view: list[RequestView] = field(default_factory=list)

    async def run_before_model_call(self, state: RunState) -> None:
        for fn in self.before_model_call:
            await _maybe_await(fn(state))

    async def run_after_tools(self, state: RunState, records: list[ToolCallRecord]) -> None:
        for fn in self.after_tools:
            await _maybe_await(fn(state, records))

    def check_completion(self, state: RunState) -> str | None:
        """The first refusal reminder, or None when every gate lets the run finish."""
        for gate in self.completion_gate:
            reminder = gate(state)
            if reminder:
                return reminder
        return None

    def view_messages(self, state: RunState) -> Sequence[Message]:
        """The messages the model is sent this turn."""
        messages: Sequence[Message] = state.messages
        for view in self.request_view:
            messages = view(state, messages)
        return messages

    def merged(self, other: Hooks) -> Hooks:
        return Hooks(
            self.before_model_call + other.before_model_call,
            self.after_tools + other.after_tools,
            self.completion_gate + other.completion_gate,
            self.request_view + other.request_view,
        )
