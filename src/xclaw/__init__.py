"""xclaw — a local-first AI agent harness."""

__all__: list[str] = []
