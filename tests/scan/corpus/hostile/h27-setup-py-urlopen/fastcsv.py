import csv


def read(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))
