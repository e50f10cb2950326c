"""Split a list into pages for display. Pages are numbered from 1."""


def page_count(total, per_page):
    return (total + per_page - 1) // per_page


def paginate(items, page, per_page=10):
    """The items on ``page`` (1-based); an empty list past the last page."""
    if page < 1 or per_page < 1:
        raise ValueError("page and per_page start at 1")
    start = (page - 1) * per_page
    return items[start : start + per_page]
