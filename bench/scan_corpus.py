"""Scan before install: the hostile and benign corpus (tests/scan/corpus) through xclaw.scan,
beside two peers run in the same process on the same folders.

Figures: hostile cases caught / total, and benign cases with a high-severity finding (false
high) / total. Ours counts a case caught only when its expected rule fires at the expected
file:line with the expected severity. Peers are counted generously, since their rule ids differ:
- bandit (PyPI, Python security linter): any MEDIUM/HIGH issue anywhere in the case; false high =
  any HIGH issue in a benign case. It reads only .py files, so its Python subset (cases whose
  expected finding is in a .py file) is printed too; it is a code-quality linter, not a malware
  scanner, so it is the weaker peer.
- GuardDog (PyPI, DataDog's malicious-package scanner, the closest peer): any ``threat-*`` rule
  anywhere in the case; false high = any ``threat-*`` in a benign case. Heavy (boto3, pygit2,
  yara), so it is not a project dependency: give its command in ``GUARDDOG`` or put ``guarddog``
  on PATH (``python3 -m venv /tmp/gd && /tmp/gd/bin/pip install 'guarddog>=3.2'``).
Run: ``make bench`` or ``python bench/scan_corpus.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from xclaw.scan import Severity, scan_path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "scan" / "corpus"


def _case_of(location: str, root: Path) -> str:
    p = Path(location)
    rel = p.relative_to(root) if p.is_absolute() else p
    return rel.parts[0]


def ours(manifest: dict[str, Any]) -> tuple[set[str], set[str], float]:
    start = time.perf_counter()
    caught, false_high = set(), set()
    for case in manifest["hostile"]:
        report = scan_path(CORPUS / "hostile" / case["id"])
        if any(
            f.rule == case["rule"]
            and f.file == case["file"]
            and f.line == case["line"]
            and f.severity == Severity(case["severity"])
            for f in report.findings
        ):
            caught.add(case["id"])
    for case in manifest["benign"]:
        if scan_path(CORPUS / "benign" / case["id"]).highest is Severity.HIGH:
            false_high.add(case["id"])
    return caught, false_high, time.perf_counter() - start


def bandit(kind: str) -> dict[str, set[str]]:
    """Case id -> severities bandit reported in it."""
    root = CORPUS / kind
    out = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", "-q", "-f", "json", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise RuntimeError(f"bandit failed: {out.stderr[-500:]}")
    found: dict[str, set[str]] = {}
    for issue in json.loads(out.stdout)["results"]:
        found.setdefault(_case_of(issue["filename"], root), set()).add(issue["issue_severity"])
    return found


def guarddog(cmd: str, kind: str) -> dict[str, set[str]]:
    """Case id -> GuardDog rule names that matched in it."""
    root = CORPUS / kind
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run(
            [cmd, "pypi", "scan", str(root), "--output-format", "json"],
            capture_output=True,
            text=True,
            check=False,
            cwd=cache,
        )
    if not out.stdout.strip().startswith("{"):
        raise RuntimeError(f"guarddog failed: {out.stderr[-500:]}")
    found: dict[str, set[str]] = {}
    for rule, hits in json.loads(out.stdout)["results"].items():
        for hit in hits if isinstance(hits, list) else []:
            loc = hit["location"].rsplit(":", 1)[0]
            found.setdefault(_case_of(loc, root), set()).add(rule)
    return found


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    return fn(*args), time.perf_counter() - start


def main() -> None:
    manifest = json.loads((CORPUS / "corpus.json").read_text(encoding="utf-8"))
    hostile = [c["id"] for c in manifest["hostile"]]
    benign = [c["id"] for c in manifest["benign"]]
    py_subset = {c["id"] for c in manifest["hostile"] if c["file"].endswith(".py")}
    nh, nb, npy = len(hostile), len(benign), len(py_subset)
    print(f"corpus: {nh} hostile, {nb} benign ({npy} hostile cases with the finding in a .py)")

    caught, false_high, t_ours = ours(manifest)
    print(
        f"xclaw.scan      caught {len(caught)}/{nh}  python subset "
        f"{len(caught & py_subset)}/{npy}  false-high {len(false_high)}/{nb}  {t_ours:.2f}s"
    )
    for cid in sorted(set(hostile) - caught):
        print(f"  missed: {cid}")
    for cid in sorted(false_high):
        print(f"  false high: {cid}")

    if importlib.util.find_spec("bandit") is None:
        print("bandit          not measured: not installed (pip install 'bandit>=1.9')")
    else:
        _bandit_line(caught, nh, nb, py_subset)
    _guarddog_line(caught, nh, nb, py_subset)


def _bandit_line(caught: set[str], nh: int, nb: int, py_subset: set[str]) -> None:
    npy = len(py_subset)
    (b_hostile, b_benign), t_b = _timed(lambda: (bandit("hostile"), bandit("benign")))
    b_caught = {c for c, sev in b_hostile.items() if sev & {"MEDIUM", "HIGH"}}
    b_false = {c for c, sev in b_benign.items() if "HIGH" in sev}
    print(
        f"bandit          caught {len(b_caught)}/{nh}  python subset "
        f"{len(b_caught & py_subset)}/{npy}  false-high {len(b_false)}/{nb}  {t_b:.2f}s"
    )
    print(
        f"ratio caught xclaw/bandit: all {len(caught) / max(1, len(b_caught)):.2f}x, "
        f"python subset {len(caught & py_subset) / max(1, len(b_caught & py_subset)):.2f}x"
    )


def _guarddog_line(caught: set[str], nh: int, nb: int, py_subset: set[str]) -> None:
    npy = len(py_subset)
    cmd = os.environ.get("GUARDDOG") or shutil.which("guarddog")
    if not cmd:
        print("guarddog        not measured: not installed (set GUARDDOG=/path/to/guarddog)")
        return
    (g_hostile, g_benign), t_g = _timed(lambda: (guarddog(cmd, "hostile"), guarddog(cmd, "benign")))
    threat = {c for c, rules in g_hostile.items() if any(r.startswith("threat-") for r in rules)}
    g_any = set(g_hostile)
    g_false = {c for c, rules in g_benign.items() if any(r.startswith("threat-") for r in rules)}
    print(
        f"guarddog        caught {len(threat)}/{nh} (threat-*; {len(g_any)}/{nh} with "
        f"capability-* too)  python subset {len(threat & py_subset)}/{npy}  "
        f"false-high {len(g_false)}/{nb}  {t_g:.2f}s"
    )
    for cid in sorted(g_false):
        print(f"  guarddog false high: {cid} ({', '.join(sorted(g_benign[cid]))})")
    print(f"ratio caught xclaw/guarddog: {len(caught) / max(1, len(threat)):.2f}x")


if __name__ == "__main__":
    main()
