"""Parsing of network settings given as text (environment variables, config files)."""


def parse_host(value):
    host = value.strip()
    if not host:
        raise ValueError("host is empty")
    return host


def parse_port(value):
    text = value.strip()
    if not text.isdigit():
        raise ValueError(f"port {value!r} is not a number")
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {value!r} is outside 1-65535")
    return port
