"""xclaw — a local-first AI agent harness.

    from xclaw import Agent, ScriptedModel, build_agent
    result = await Agent(model=ScriptedModel([...]), workdir="./proj").run("task")

``Agent(...)`` is exactly what it is given (no configuration read). ``build_agent(workdir,
model=...)`` is the agent ``xclaw run`` builds: the user's and the project's configuration,
enabled plugins and skills, limits, sandbox, approval mode, MCP servers and session store.

Names are imported on first use (PEP 562), so ``xclaw --help`` does not pay for SQLAlchemy,
the provider SDKs or the tool set. ``xclaw.__version__`` is the installed distribution's
version (``importlib.metadata``), ``0.0.0+unknown`` when xclaw runs from a tree that was
never installed.

``__all__`` is the whole public API, pinned by tests/test_public_api.py: every name in it
resolves, and the module binds no other public name (imports here are private, ``_``).
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.compose.coding import CodingRuntime, build_agent
    from xclaw.core.errors import (
        ConfigError,
        LimitExceeded,
        ModelError,
        PolicyDenied,
        RunCancelled,
        ToolArgumentsInvalid,
        ToolError,
        XclawError,
    )
    from xclaw.core.events import Event, EventBus
    from xclaw.core.hooks import Hooks
    from xclaw.core.limits import Limits
    from xclaw.core.messages import Message, ToolResult
    from xclaw.core.model import Model, ModelRequest
    from xclaw.core.state import RunControl, RunMetrics, RunResult, ToolCallRecord
    from xclaw.core.tooling import Risk
    from xclaw.models.base import ModelTurn
    from xclaw.models.scripted import FunctionModel, ScriptedModel
    from xclaw.tools.base import Tool, ToolContext, tool
    from xclaw.tools.registry import ToolRegistry

    __version__: str

_LAZY: dict[str, str] = {
    "Agent": "xclaw.coding.agent",
    "CodingRuntime": "xclaw.compose.coding",
    "ConfigError": "xclaw.core.errors",
    "Event": "xclaw.core.events",
    "EventBus": "xclaw.core.events",
    "FunctionModel": "xclaw.models.scripted",
    "Hooks": "xclaw.core.hooks",
    "LimitExceeded": "xclaw.core.errors",
    "Limits": "xclaw.core.limits",
    "Message": "xclaw.core.messages",
    "Model": "xclaw.core.model",
    "ModelError": "xclaw.core.errors",
    "ModelRequest": "xclaw.core.model",
    "ModelTurn": "xclaw.models.base",
    "PolicyDenied": "xclaw.core.errors",
    "Risk": "xclaw.core.tooling",
    "RunCancelled": "xclaw.core.errors",
    "RunControl": "xclaw.core.state",
    "RunMetrics": "xclaw.core.state",
    "RunResult": "xclaw.core.state",
    "ScriptedModel": "xclaw.models.scripted",
    "Tool": "xclaw.tools.base",
    "ToolArgumentsInvalid": "xclaw.core.errors",
    "ToolCallRecord": "xclaw.core.state",
    "ToolContext": "xclaw.tools.base",
    "ToolError": "xclaw.core.errors",
    "ToolRegistry": "xclaw.tools.registry",
    "ToolResult": "xclaw.core.messages",
    "XclawError": "xclaw.core.errors",
    "build_agent": "xclaw.compose.coding",
    "tool": "xclaw.tools.base",
}


_UNKNOWN_VERSION = "0.0.0+unknown"


def _installed_version() -> str:
    """The version of the installed ``xclaw`` distribution (the one pip or the venv holds)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("xclaw")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return _UNKNOWN_VERSION


def __getattr__(name: str) -> _typing.Any:
    if name == "__version__":
        value: _typing.Any = _installed_version()
    else:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'xclaw' has no attribute {name!r}")
        value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Agent",
    "CodingRuntime",
    "ConfigError",
    "Event",
    "EventBus",
    "FunctionModel",
    "Hooks",
    "LimitExceeded",
    "Limits",
    "Message",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelTurn",
    "PolicyDenied",
    "Risk",
    "RunCancelled",
    "RunControl",
    "RunMetrics",
    "RunResult",
    "ScriptedModel",
    "Tool",
    "ToolArgumentsInvalid",
    "ToolCallRecord",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "XclawError",
    "__version__",
    "build_agent",
    "tool",
]
