import sys

INVISIBLE = "​‌‍⁠﻿"
TABLE = {ord(c): None for c in INVISIBLE}

sys.stdout.write(sys.stdin.read().translate(TABLE))
