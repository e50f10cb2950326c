"""One file under scan: its text, what kind of file it is, and how findings are recorded."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from xclaw.redact import redact
from xclaw.scan.report import Finding, Severity
from xclaw.scan.rules import RULES

EXCERPT_CHARS = 120

_KINDS = {
    "python": {".py", ".pyw", ".pyi"},
    "js": {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"},
    "shell": {".sh", ".bash", ".zsh", ".ksh", ".fish", ".ps1", ".psm1", ".bat", ".cmd"},
    "doc": {".md", ".markdown", ".txt", ".rst", ".mdx", ".adoc"},
    "data": {".json", ".jsonc", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".xml", ".csv"},
}
_SHELL_NAMES = {"makefile", "gnumakefile", "dockerfile", "justfile", "containerfile"}
CODE_KINDS = frozenset({"python", "js", "shell", "other-code"})


def file_kind(rel: str, head: str) -> str:
    """``python`` | ``js`` | ``shell`` | ``doc`` | ``data`` | ``other-code`` | ``other``."""
    p = PurePosixPath(rel)
    suffix = p.suffix.lower()
    for kind, suffixes in _KINDS.items():
        if suffix in suffixes:
            return kind
    if p.name.lower() in _SHELL_NAMES:
        return "shell"
    if head.startswith("#!"):
        first = head.split("\n", 1)[0]
        if "python" in first:
            return "python"
        if "node" in first or "deno" in first or "bun" in first:
            return "js"
        return "shell"
    if suffix in {".rb", ".pl", ".php", ".lua", ".go", ".rs", ".java", ".c", ".cc", ".cpp"}:
        return "other-code"
    return "other" if suffix else "doc"


def visible(text: str) -> str:
    """Invisible and control characters written as ``<U+XXXX>`` so a reader sees them."""
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch != " " and (cat in {"Cf", "Cc", "Co", "Zl", "Zp"} or cat == "Zs" and ch != " "):
            out.append(f"<U+{ord(ch):04X}>")
        elif 0xFE00 <= ord(ch) <= 0xFE0F or 0xE0100 <= ord(ch) <= 0xE01EF or ord(ch) == 0x3164:
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    return "".join(out)


@dataclass
class FileContext:
    rel: str
    text: str
    kind: str
    install: bool = False  # runs at install time (a hook script, setup.py, install.sh, ...)
    findings: list[Finding] = field(default_factory=list)
    lines: list[str] = field(init=False)
    parsed: bool = False  # Python: the ast rules ran (they report what a string really runs)

    def __post_init__(self) -> None:
        self.lines = self.text.split("\n")

    @property
    def is_code(self) -> bool:
        return self.kind in CODE_KINDS

    @property
    def is_doc(self) -> bool:
        return self.kind in {"doc", "data", "other"}

    def excerpt(self, line: int, column: int) -> str:
        if not 1 <= line <= len(self.lines):
            return ""
        raw = self.lines[line - 1].rstrip("\r")
        start = max(0, column - 1 - EXCERPT_CHARS // 3)
        piece = raw[start : start + EXCERPT_CHARS].strip()
        shown = visible(piece)
        if len(shown) > EXCERPT_CHARS + 40:
            shown = shown[: EXCERPT_CHARS + 40] + "…"
        return redact(shown)

    def emit(
        self,
        rule: str,
        line: int,
        column: int = 1,
        *,
        severity: Severity | None = None,
        message: str | None = None,
    ) -> None:
        spec = RULES[rule]
        self.findings.append(
            Finding(
                file=self.rel,
                line=line,
                column=column,
                rule=rule,
                severity=severity or spec.severity,
                message=message or spec.message,
                excerpt=self.excerpt(line, column),
            )
        )

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset into ``text``."""
        line = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        return line, offset - start + 1
