"""Context management: count tokens, keep each request within the model's window, and
compact removed turns into checkpoint summaries (seed 000 §11, seed 003 chapter 03)."""

from xclaw.context.budget import ContextBudget, FitReport, budget_hook, fit_messages
from xclaw.context.compaction import ContextNote, compact
from xclaw.context.tokens import (
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    count_messages,
    counter_for_model,
)

__all__ = [
    "ContextBudget",
    "ContextNote",
    "EstimateCounter",
    "FitReport",
    "TiktokenCounter",
    "TokenCounter",
    "budget_hook",
    "compact",
    "count_messages",
    "counter_for_model",
    "fit_messages",
]
