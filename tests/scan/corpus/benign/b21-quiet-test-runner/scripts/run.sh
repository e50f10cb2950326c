#!/usr/bin/env bash
set -euo pipefail
pytest -q "$@" 2>&1 | tail -40
