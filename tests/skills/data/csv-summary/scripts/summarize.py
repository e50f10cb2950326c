"""Summarise a CSV file: rows, columns and min/mean/max of numeric columns."""

import csv
import statistics
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "assets" / "report.md.tmpl"


def summarize(path: str) -> str:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    columns = list(rows[0]) if rows else []
    stats = []
    for col in columns:
        try:
            values = [float(r[col]) for r in rows]
        except ValueError:
            continue
        stats.append(
            f"- {col}: min {min(values):g}, mean {statistics.fmean(values):g}, max {max(values):g}"
        )
    return TEMPLATE.read_text(encoding="utf-8").format(
        rows=len(rows), columns=", ".join(columns), stats="\n".join(stats) or "- none"
    )


if __name__ == "__main__":
    print(summarize(sys.argv[1]))
