"""Running the bridge app under uvicorn: loopback by default, a pre-bound socket (so a busy
port is a clear error, not an exit from inside uvicorn), graceful shutdown on Ctrl+C (open
streams get ``GRACE_S`` to finish, then the app's shutdown closes every model). Its logs
(the access log's request lines included) pass the redactor."""

from __future__ import annotations

import ipaddress
import socket

import uvicorn
from fastapi import FastAPI

from xclaw.core.errors import ConfigError
from xclaw.obs.serverlog import install_log_redaction, uvicorn_log_config

__all__ = ["GRACE_S", "bind", "is_loopback", "make_server"]

GRACE_S = 5


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bare, port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        raise ConfigError(
            f"The bridge cannot listen on {host}:{port} ({err.strerror or err}).",
            code="BRIDGE_ADDRESS_UNAVAILABLE",
            hint="Choose another --port, or stop what is listening there.",
        ) from None
    return sock


def make_server(app: FastAPI, *, log_level: str = "info") -> uvicorn.Server:
    """A uvicorn server for ``app``; start it with ``serve(sockets=[bind(...)])``."""
    install_log_redaction()
    config = uvicorn.Config(
        app,
        lifespan="on",
        ws="none",  # no websockets: nothing to import, nothing to expose
        http="h11",
        log_level=log_level,
        log_config=uvicorn_log_config(),
        timeout_graceful_shutdown=GRACE_S,
        server_header=False,
    )
    return uvicorn.Server(config)
