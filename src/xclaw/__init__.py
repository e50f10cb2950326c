"""xclaw — a local-first AI agent harness.

from xclaw import Agent, ScriptedModel
result = await Agent(model=ScriptedModel([...]), workdir="./proj").run("task")
"""

from xclaw.coding.agent import Agent
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

__all__ = [
    "Agent",
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
    "tool",
]
