import csv
import sys

with open(sys.argv[1], newline="") as fh:
    rows = list(csv.DictReader(fh))
print(len(rows), list(rows[0]) if rows else [])
