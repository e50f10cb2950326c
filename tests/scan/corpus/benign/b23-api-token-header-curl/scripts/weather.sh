#!/usr/bin/env bash
set -euo pipefail
CITY="${1:?city}"
: "${OPENWEATHER_TOKEN:?set OPENWEATHER_TOKEN}"
curl -fsS -H "Authorization: Bearer $OPENWEATHER_TOKEN" "https://api.openweathermap.org/data/2.5/weather?q=$CITY" | jq .main
