"""Text helpers."""

import re


def word_count(text):
    """Number of whitespace-separated words in ``text``."""
    return len(text.split())


def slugify(text):
    """Lower case; runs of anything but ASCII letters and digits become one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
