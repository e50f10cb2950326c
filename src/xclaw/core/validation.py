"""Pydantic validation errors in one line, for the coded errors of every layer."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["validation_detail"]


def validation_detail(err: ValidationError, whole: str) -> str:
    """``field.path: message; ...`` (no input values: they may hold secrets); ``whole`` names
    the object itself when the error is about it, not one of its fields."""
    return "; ".join(
        f"{'.'.join(str(x) for x in e['loc']) or whole}: {e['msg']}"
        for e in err.errors(include_url=False, include_input=False)
    )
