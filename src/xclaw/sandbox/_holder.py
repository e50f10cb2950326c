"""Keeps a session's network namespace alive and lets the host reach its loopback ports.

Run by xclaw inside a fresh network namespace (``bwrap --unshare-net``), standard library
only. It prints ``ready <pid>`` once its Unix socket listens. Each connection on that socket
starts with ``<port>\\n``; the holder connects to ``127.0.0.1:<port>`` inside the namespace,
answers ``K\\n`` (or ``E\\n``) and then copies bytes both ways. Hand-written because it is the
only bridge between a host listener and a namespace's loopback, and it must stay tiny.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(conn: socket.socket) -> None:
    header = b""
    while not header.endswith(b"\n") and len(header) < 8:
        byte = conn.recv(1)
        if not byte:
            break
        header += byte
    try:
        port = int(header.strip() or b"0")
        if not 0 < port < 65536:
            raise ValueError(port)
        upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
    except (OSError, ValueError):
        conn.sendall(b"E\n")
        conn.close()
        return
    upstream.settimeout(None)
    conn.sendall(b"K\n")
    back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
    back.start()
    _pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def _exit_when_parent_goes() -> None:
    sys.stdin.buffer.read()  # EOF: xclaw closed our stdin or died
    os._exit(0)


def main() -> None:
    path = sys.argv[1]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(64)
    threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    print(f"ready {os.getpid()}", flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
