"""Tool registries are instances. ``bind`` gives the loop a per-run ``Toolbox``."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunControl
from xclaw.core.tooling import OutputSink, PreparedCall, ToolSpec
from xclaw.core.validation import validation_detail
from xclaw.tools.base import Tool, ToolContext, Workspace
from xclaw.tools.output import cap_result


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, t: Tool) -> Tool:
        if t.name in self._tools:
            raise ValueError(f"a tool named {t.name!r} is already registered")
        self._tools[t.name] = t
        return t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def unregister(self, name: str) -> Tool | None:
        """Remove a tool (a plugin switched off); the removed tool, or None."""
        return self._tools.pop(name, None)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def bind(
        self, workspace: Workspace, *, session_id: str = "", control: RunControl | None = None
    ) -> BoundToolbox:
        """The tools for one run: its workspace, and the session and control each call's
        context names."""
        return BoundToolbox(self, workspace, session_id=session_id, control=control)


class BoundToolbox:
    """The registry bound to one run's workspace; implements ``core.tooling.Toolbox``."""

    def __init__(
        self,
        registry: ToolRegistry,
        workspace: Workspace,
        *,
        session_id: str = "",
        control: RunControl | None = None,
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.session_id = session_id
        self.control = control
        self._specs = [t.spec for t in registry]

    def specs(self) -> Sequence[ToolSpec]:
        return self._specs

    def prepare(self, call: ToolCallPart) -> PreparedCall | ToolResult:
        t = self.registry.get(call.name)
        if t is None:
            return ToolResult.failure(
                "TOOL_NOT_FOUND",
                f"There is no tool named {call.name!r}.",
                hint="Use one of: " + ", ".join(self.registry.names()),
                retryable=True,
            )
        if not isinstance(call.arguments, dict):
            return _invalid(t, "arguments must be a JSON object")
        try:
            args = t.args_model.model_validate(call.arguments)
        except ValidationError as err:
            return _invalid(t, validation_detail(err, "(arguments)"))
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
        return PreparedCall(call, t.spec, args, key, access=t.access(args), extra={"tool": t})

    async def inspect(self, prepared: PreparedCall) -> ToolResult | None:
        """Complete ``prepared.access`` with the tool's own look at the world, if it has one.
        A failure to look (the element is gone, the page timed out) refuses the call unrun."""
        t: Tool = prepared.extra["tool"]
        if t.inspect is None:
            return None
        try:
            async with asyncio.timeout(t.timeout_s):
                prepared.access = await t.inspect(prepared.args)
        except ToolError as err:
            return ToolResult.failure(
                err.code, err.message, hint=err.hint, retryable=err.retryable, data=err.data
            )
        except TimeoutError:
            return ToolResult.failure(
                "TOOL_TIMEOUT",
                f"{t.name} could not check its target within {t.timeout_s:g}s; nothing ran.",
                hint="Try again, or a smaller request.",
                retryable=True,
            )
        except Exception as err:  # noqa: BLE001 - a broken inspector must never kill the loop
            return ToolResult.failure(
                "TOOL_CRASHED",
                f"{t.name} failed checking its target: {type(err).__name__}: {err}; nothing ran.",
                hint="Report this as a bug; try another approach meanwhile.",
            )
        return None

    async def execute(self, prepared: PreparedCall, output: OutputSink) -> ToolResult:
        t: Tool = prepared.extra["tool"]
        once = tuple(Path(p) for p in prepared.decision.targets)
        ctx = ToolContext(
            self.workspace,
            output,
            prepared.call.call_id,
            once_roots=once,
            network=prepared.decision.network,
            session_id=self.session_id,
            control=self.control,
        )
        try:
            result = await _invoke(t, ctx, prepared.args)
        except ToolError as err:
            result = ToolResult.failure(
                err.code, err.message, hint=err.hint, retryable=err.retryable, data=err.data
            )
        except TimeoutError:
            result = ToolResult.failure(
                "TOOL_TIMEOUT",
                f"{t.name} did not finish within {t.timeout_s:g}s.",
                hint="Try a smaller request.",
                retryable=True,
            )
        except Exception as err:  # noqa: BLE001 - a broken tool must never kill the loop
            result = ToolResult.failure(
                "TOOL_CRASHED",
                f"{t.name} failed unexpectedly: {type(err).__name__}: {err}",
                hint="Report this as a bug; try another approach meanwhile.",
            )
        return cap_result(result, t.output_cap)


def _invalid(t: Tool, detail: str) -> ToolResult:
    """The refusal names the bad fields with what each takes (type, allowed values, bounds),
    not the whole schema, which the model already has in the tool catalogue."""
    from xclaw.tools.argument_errors import explain

    compact, takes = explain(t.spec.parameters, detail)
    return ToolResult.failure(
        "TOOL_ARGUMENTS_INVALID",
        f"Arguments for {t.name} are invalid: {detail}",
        hint=f"{takes}. Send the call again with that fixed; nothing ran.",
        retryable=True,
        data=compact,
    )


async def _invoke(t: Tool, ctx: ToolContext, args: Any) -> ToolResult:
    kwargs = {name: getattr(args, name) for name in type(args).model_fields}
    if t.wants_context:
        out = t.fn(ctx, **kwargs)
    else:
        out = t.fn(**kwargs)
    if inspect.isawaitable(out):
        return await asyncio.wait_for(out, timeout=t.timeout_s)
    return out
