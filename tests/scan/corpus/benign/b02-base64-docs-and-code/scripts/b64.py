import base64
import sys
from pathlib import Path


def main(mode: str, src: str, dst: str) -> None:
    data = Path(src).read_bytes()
    out = base64.b64decode(data) if mode == "decode" else base64.b64encode(data)
    Path(dst).write_bytes(out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
