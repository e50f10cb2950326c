"""Scan a skill or plugin before it is installed.

``scan_path(folder)`` returns a ``ScanReport``: findings with file:line:column, a severity
(low / medium / high) and a stable rule id (``xclaw.scan.rules.RULES`` lists each with why its
severity). A high finding refuses the install unless the user forces it
(``report.refuses(force)``). Symbolic links are never followed and binaries never read past
their first bytes.
"""

from xclaw.scan.report import Finding, ScanError, ScanReport, Severity
from xclaw.scan.rules import RULES, Rule
from xclaw.scan.scanner import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, scan_path

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "RULES",
    "Finding",
    "Rule",
    "ScanError",
    "ScanReport",
    "Severity",
    "scan_path",
]
