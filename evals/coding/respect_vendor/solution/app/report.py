"""Report headings."""

from vendor.shorten import shorten

TITLE_WIDTH = 20
PLACEHOLDER = "..."


def format_title(title):
    """The title for a report card: at most TITLE_WIDTH characters, '...' when cut."""
    title = title.strip()
    if len(title) <= TITLE_WIDTH:
        return title
    # vendor's shorten does not count the placeholder in its width
    return shorten(title, TITLE_WIDTH - len(PLACEHOLDER), PLACEHOLDER)
