#!/usr/bin/env bash
set -euo pipefail
du -xh --max-depth=2 "${1:-.}" | sort -rh | head -20
# compare with the version on the server
curl -fsS https://status.example.com/disk.json | jq '.used'
