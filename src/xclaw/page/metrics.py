"""``AgentLoopMetrics`` (seed 002 §8): the 13 figures of one ``chat()``, and how many rounds
reused the previous snapshot because the page had not changed (``snapshot_reuse_count``).

Rounds, tool calls and tokens are counted from the loop's events (tokens from the models'
``Usage``); snapshots, recoveries and intercepts are reported by the page run itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xclaw.core.events import Event


@dataclass(frozen=True, slots=True)
class AgentLoopMetrics:
    round_count: int
    total_tool_calls: int
    successful_tool_calls: int
    failed_tool_calls: int
    tool_success_rate: float  # 0-1, four decimals; 1.0 when no tool ran
    recovery_count: int
    redundant_intercept_count: int
    snapshot_read_count: int
    latest_snapshot_size: int
    avg_snapshot_size: int
    max_snapshot_size: int
    input_tokens: int
    output_tokens: int
    snapshot_reuse_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The seed's field names (camelCase), for dashboards that already use them."""
        return {
            "roundCount": self.round_count,
            "totalToolCalls": self.total_tool_calls,
            "successfulToolCalls": self.successful_tool_calls,
            "failedToolCalls": self.failed_tool_calls,
            "toolSuccessRate": self.tool_success_rate,
            "recoveryCount": self.recovery_count,
            "redundantInterceptCount": self.redundant_intercept_count,
            "snapshotReadCount": self.snapshot_read_count,
            "latestSnapshotSize": self.latest_snapshot_size,
            "avgSnapshotSize": self.avg_snapshot_size,
            "maxSnapshotSize": self.max_snapshot_size,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "snapshotReuseCount": self.snapshot_reuse_count,
        }


class MetricsCollector:
    """Subscribes to the run's event bus; the page run adds what events do not carry."""

    def __init__(self) -> None:
        self.rounds = 0
        self.ok_calls = 0
        self.failed_calls = 0
        self.recoveries = 0
        self.intercepts = 0
        self.snapshot_sizes: list[int] = []
        self.reused = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def __call__(self, ev: Event) -> None:
        p = ev.payload
        if ev.type == "model.message_sent":
            self.rounds += 1
        elif ev.type == "model.message_complete":
            self.input_tokens += int(p.get("input_tokens") or 0)
            self.output_tokens += int(p.get("output_tokens") or 0)
        elif ev.type == "tool.completed":
            if p.get("ok"):
                self.ok_calls += 1
            else:
                self.failed_calls += 1

    def snapshot_read(self, size: int) -> None:
        self.snapshot_sizes.append(size)

    def snapshot_reused(self) -> None:
        self.reused += 1

    def build(self) -> AgentLoopMetrics:
        total = self.ok_calls + self.failed_calls
        sizes = self.snapshot_sizes
        return AgentLoopMetrics(
            round_count=self.rounds,
            total_tool_calls=total,
            successful_tool_calls=self.ok_calls,
            failed_tool_calls=self.failed_calls,
            tool_success_rate=round(self.ok_calls / total, 4) if total else 1.0,
            recovery_count=self.recoveries,
            redundant_intercept_count=self.intercepts,
            snapshot_read_count=len(sizes),
            latest_snapshot_size=sizes[-1] if sizes else 0,
            avg_snapshot_size=round(sum(sizes) / len(sizes)) if sizes else 0,
            max_snapshot_size=max(sizes, default=0),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            snapshot_reuse_count=self.reused,
        )
