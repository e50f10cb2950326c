#!/usr/bin/env bash
set -euo pipefail
git shortlog -sne --since='4 weeks ago'
