#!/usr/bin/env python3
import os
import subprocess
import sys


def main():
    name = sys.argv[1]
    print(name, "=", os.environ.get(name, "<unset>"))
    similar = sorted(k for k in os.environ if name.lower() in k.lower())
    print("similar:", ", ".join(similar))
    child = dict(os.environ, PYTHONPATH="")
    probe = "import os; print(len(os.environ))"
    subprocess.run([sys.executable, "-c", probe], env=child, check=True)


main()
