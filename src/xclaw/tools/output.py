"""Output capping: head + tail, with the cut marked, so a model sees both ends."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from xclaw.core.messages import ToolResult


def head_tail(text: str, cap: int) -> tuple[str, bool]:
    """Keep the first and last parts of ``text`` within ``cap`` characters."""
    if len(text) <= cap:
        return text, False
    head = cap * 2 // 3
    tail = cap - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n…[{cut} characters truncated]…\n{text[-tail:]}", True


def cap_result(result: ToolResult, cap: int) -> ToolResult:
    """Shrink string fields of ``data`` (largest first) until the result fits ``cap``."""
    size = len(result.message) + sum(_size(v) for v in result.data.values())
    if size <= cap:
        return result
    data: dict[str, Any] = dict(result.data)
    budget = max(cap - len(result.message), 256)
    strings = sorted(
        (k for k, v in data.items() if isinstance(v, str)), key=lambda k: -len(data[k])
    )
    others = sum(_size(v) for k, v in data.items() if k not in strings)
    share = max((budget - others) // max(len(strings), 1), 128)
    for k in strings:
        data[k], _ = head_tail(data[k], share)
    message, _ = head_tail(result.message, max(cap // 4, 256))
    return replace(result, message=message, data=data, truncated=True)


def _size(v: Any) -> int:
    if isinstance(v, str):
        return len(v)
    if isinstance(v, list | tuple):
        return sum(_size(x) for x in v) + 2
    if isinstance(v, dict):
        return sum(len(str(k)) + _size(x) for k, x in v.items()) + 2
    return 8
