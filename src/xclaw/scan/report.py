"""What a scan found: findings with file:line, a severity and a stable rule id, and a report
that decides whether an install is refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from xclaw.core.errors import XclawError


class ScanError(XclawError):
    """The scan could not start (the path is missing or not a file or folder)."""

    code = "SCAN_PATH_INVALID"


class Severity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.LOW: 0, Severity.MEDIUM: 1, Severity.HIGH: 2}


@dataclass(frozen=True, order=True)
class Finding:
    """One thing worth a look. ``line``/``column`` are 1-based; 0 means the whole file."""

    file: str
    line: int
    column: int
    rule: str
    severity: Severity
    message: str
    excerpt: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "severity": self.severity.value,
            "rule": self.rule,
            "message": self.message,
            "excerpt": self.excerpt,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            file=str(data["file"]),
            line=int(data["line"]),
            column=int(data["column"]),
            rule=str(data["rule"]),
            severity=Severity(data["severity"]),
            message=str(data["message"]),
            excerpt=str(data.get("excerpt", "")),
        )


@dataclass
class ScanReport:
    """Every finding of one scan, sorted by (file, line, column, rule)."""

    root: str
    findings: list[Finding] = field(default_factory=list)
    files_scanned: int = 0

    @property
    def highest(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def refuses(self, force: bool) -> bool:
        """True when an install must stop: a high finding, and the user did not ``--force``."""
        return not force and self.highest is Severity.HIGH

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in (Severity.HIGH, Severity.MEDIUM, Severity.LOW)}
        for f in self.findings:
            out[f.severity.value] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        highest = self.highest
        return {
            "root": self.root,
            "files_scanned": self.files_scanned,
            "highest": highest.value if highest else None,
            "counts": self.counts(),
            "findings": [f.to_json() for f in self.findings],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanReport:
        return cls(
            root=str(data["root"]),
            findings=[Finding.from_json(f) for f in data.get("findings", [])],
            files_scanned=int(data.get("files_scanned", 0)),
        )

    def summary(self) -> str:
        """One line per finding, most severe first: ``file:line:col SEVERITY rule message``."""
        ordered = sorted(self.findings, key=lambda f: (-f.severity.rank, f.file, f.line))
        return "\n".join(
            f"{f.file}:{f.line}:{f.column} {f.severity.value.upper()} {f.rule} {f.message}"
            for f in ordered
        )
