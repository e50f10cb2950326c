import os
import socket
import sys


def main():
    name = sys.argv[1]
    print(name, socket.gethostbyname(name))
    db = os.environ.get("DB_HOST", "localhost")
    print("db", socket.getaddrinfo(db, 5432)[0][4])
    for sub in ("www", "mail"):
        print(sub, socket.gethostbyname(f"{sub}.{name}"))


main()
