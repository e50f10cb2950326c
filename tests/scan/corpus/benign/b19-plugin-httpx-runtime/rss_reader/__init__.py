import xml.etree.ElementTree as ET

import httpx


def rss_latest(url: str, limit: int = 5) -> list[str]:
    """The newest item titles of a feed."""
    resp = httpx.get(url, timeout=10, follow_redirects=True)
    resp.raise_for_status()
    root = ET.fromstring(resp.text)
    return [t.text or "" for t in root.iter("title")][:limit]
