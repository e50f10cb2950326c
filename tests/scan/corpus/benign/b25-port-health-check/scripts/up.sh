#!/usr/bin/env bash
for port in 5432 6379 8080; do
  if timeout 1 bash -c "</dev/tcp/127.0.0.1/$port" 2>/dev/null; then echo "$port up"; else echo "$port down"; fi
done
nc -z localhost 11211 && echo memcached up
exec 3<>/dev/tcp/127.0.0.1/8080
printf 'GET /health HTTP/1.0\r\n\r\n' >&3
cat <&3 | head -1
exec 3<&-
