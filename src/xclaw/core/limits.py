"""Run limits. Hitting one stops the run as *interrupted* with the reason, never as success."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_turns: int = 200
    turn_timeout_s: float = 600.0
    tool_timeout_s: float = 900.0
    max_protocol_errors: int = 3
    max_identical_calls: int = 5
    max_output_bytes: int = 50_000_000
    wall_time_s: float = 4 * 3600.0
    max_gate_refusals: int = 3
    # A stream that drops after text began: the partial turn is discarded and asked again
    # this many times (a drop before anything arrived is the model chain's retry policy).
    stream_retries: int = 1
