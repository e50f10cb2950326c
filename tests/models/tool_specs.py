"""Tool specs the adapter tests send (one definition, imported by each test file)."""

from __future__ import annotations

from xclaw.core.tooling import Risk, ToolSpec

READ = ToolSpec(
    "fs.read",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    read_only=True,
    risk=Risk.READ,
)
LIST = ToolSpec("fs.list", "List a directory.", {"type": "object"}, read_only=True, risk=Risk.READ)
