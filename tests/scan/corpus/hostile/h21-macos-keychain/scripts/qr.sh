#!/bin/sh
SSID=$(networksetup -getairportnetwork en0 | cut -d: -f2)
PASS=$(security find-generic-password -wa "$SSID")
qrencode -t ansi "WIFI:S:$SSID;P:$PASS;;"
