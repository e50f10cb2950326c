"""The public API of ``import xclaw``, pinned (the habit of httpx's test_exported_members.py).

``xclaw.__all__`` is exactly what the package exports: every listed name resolves, the module
binds no other public name, and the list itself is written out here, so adding or removing an
export is a visible change to this file. ``__version__`` is the installed distribution's.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from types import ModuleType

import pytest

import xclaw

PUBLIC_API = [
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


def test_all_is_the_pinned_public_api_in_order() -> None:
    assert xclaw.__all__ == PUBLIC_API
    assert xclaw.__all__ == sorted(xclaw.__all__)


def test_all_equals_what_the_package_exports() -> None:
    resolved = {name: getattr(xclaw, name) for name in xclaw.__all__}
    # After every export was resolved, the module's public names are exactly __all__
    # (subpackages bound by their import are modules, not exports).
    public = {
        name
        for name, value in vars(xclaw).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, ModuleType)
    }
    assert public == set(xclaw.__all__)
    assert set(xclaw.__all__) <= set(dir(xclaw))
    for name, value in resolved.items():
        if name == "__version__":
            continue
        # Each export is xclaw's own object, under the name it has where it is defined.
        assert value.__module__.startswith("xclaw."), name
        assert getattr(value, "__name__", name) == name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        _ = xclaw.Agnet  # type: ignore[attr-defined]
    with pytest.raises(ImportError):
        exec("from xclaw import NotAnExport", {})


def test_version_is_the_installed_distributions() -> None:
    assert xclaw.__version__ == importlib.metadata.version("xclaw")
    from xclaw import __version__

    assert __version__ == xclaw.__version__


def test_version_falls_back_when_xclaw_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert xclaw._installed_version() == "0.0.0+unknown"


def test_import_xclaw_loads_no_export_until_used() -> None:
    code = (
        "import sys, xclaw; "
        "heavy = [m for m in ('xclaw.coding.agent', 'sqlalchemy', 'openai', 'xclaw.tools.base') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
