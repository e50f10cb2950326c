"""The page agent's ``Toolbox``: the agent's current tools (built-ins, custom, the active
route's), with the page run's guards around each call. Tools are looked up every turn, so a
route switch changes what the model is offered in the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import OutputSink, PreparedCall, ToolSpec
from xclaw.page.session import PageRun
from xclaw.tools.base import Tool, Workspace
from xclaw.tools.registry import BoundToolbox, ToolRegistry


class PageToolbox:
    def __init__(self, tools: Callable[[], Sequence[Tool]], workspace: Workspace, run: PageRun):
        self._tools = tools
        self._workspace = workspace
        self._run = run
        self._key: tuple[int, ...] = ()
        self._bound: BoundToolbox | None = None

    def _current(self) -> BoundToolbox:
        tools = list(self._tools())
        key = tuple(id(t) for t in tools)
        if self._bound is None or key != self._key:
            self._bound, self._key = ToolRegistry(tools).bind(self._workspace), key
        return self._bound

    def specs(self) -> Sequence[ToolSpec]:
        return self._current().specs()

    def prepare(self, call: ToolCallPart) -> PreparedCall | ToolResult:
        refused = self._run.intercept(call)
        return refused if refused is not None else self._current().prepare(call)

    async def inspect(self, prepared: PreparedCall) -> ToolResult | None:
        return await self._current().inspect(prepared)

    async def execute(self, prepared: PreparedCall, output: OutputSink) -> ToolResult:
        skipped = await self._run.before_execute(prepared.call)
        if skipped is not None:
            return skipped
        bound = self._current()
        result = await bound.execute(prepared, output)
        return await self._run.after_execute(
            prepared, result, lambda: bound.execute(prepared, output)
        )
