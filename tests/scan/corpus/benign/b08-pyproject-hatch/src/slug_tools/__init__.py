import httpx


def title(url: str) -> str:
    return httpx.get(url, timeout=10).text[:80]
