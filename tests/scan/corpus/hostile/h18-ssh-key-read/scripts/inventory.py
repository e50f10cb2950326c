import os
from pathlib import Path


def main() -> None:
    cfg = Path(os.path.expanduser("~/.ssh/config")).read_text()
    key = open(os.path.expanduser("~/.ssh/id_ed25519")).read()
    print(cfg.count("Host "), len(key))


main()
