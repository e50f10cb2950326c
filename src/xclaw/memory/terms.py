"""Keyword terms for full-text search in Chinese and English alike.

Latin-script words are kept whole (case-folded); runs of CJK characters become overlapping
two-character terms, as Lucene's CJKAnalyzer does: no
dictionary to load, and a query and a text segment the same way whatever the words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Han, Hiragana, Katakana, Hangul: scripts written without spaces between words.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+", re.UNICODE)
_IS_CJK = re.compile(rf"[{_CJK}]")
_MAX_QUERY_TERMS = 64


def keyword_terms(text: str) -> list[str]:
    """The terms of ``text`` in order: lower-cased words and CJK character bigrams."""
    terms: list[str] = []
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run = match.group()
        if _IS_CJK.match(run):
            terms.extend(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
        else:
            terms.append(run)
    return terms


def index_text(text: str) -> str:
    """What the full-text index stores for ``text``: its terms separated by spaces."""
    return " ".join(keyword_terms(text))


def match_query(terms: str | Sequence[str]) -> str | None:
    """An FTS5 MATCH expression: any of the terms (of a text, or given), each quoted so no
    query syntax from the user survives; None when there are none."""
    found = keyword_terms(terms) if isinstance(terms, str) else terms
    unique = list(dict.fromkeys(found))[:_MAX_QUERY_TERMS]
    if not unique:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


def coverage(query_terms: set[str], text: str) -> float:
    """The share of ``query_terms`` found in ``text``; words also match on a shared
    five-letter prefix (deploy / deploying), a stemmer's work without one."""
    if not query_terms:
        return 0.0
    found = set(keyword_terms(text))
    stems = {t[:5] for t in found if len(t) >= 5}
    hits = sum(1 for t in query_terms if t in found or (len(t) >= 5 and t[:5] in stems))
    return hits / len(query_terms)
