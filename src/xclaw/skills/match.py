"""Which skills a message calls for: ``/skill-name``, or at least two distinct description
keywords in the message (seed 003 ch. 10 §2.2: one shared word is too noisy).

Keywords: Latin words of three letters or more minus stop words, lightly singularised; Chinese
text becomes overlapping character pairs, and pairs that overlap in the message count as one
keyword (``浏览器`` is one hit, not two). Hand-written: a segmenter such as jieba ships a
dictionary of megabytes for what pairs do well enough on short descriptions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*(?:[-_][a-z0-9+#]+)*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_INVOKE = re.compile(r"(?:^|\s)/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})(?=$|[\s,.;:!?，。；：！？])")

STOP_WORDS = frozenset(
    """
    a about above after again all also an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else etc
    even ever every few for from further get gets got had has have having her here hers him
    his how however into its itself just let like made make makes many may might more most
    much must need needs not now off once one only other our ours out over own please same
    should since some such than that the their theirs them then there these they thing things
    this those through too under until use used uses using very via want was way were what
    when where whether which while who whom why will with within without would you your yours
    yes able across along already always among another anything around ask asked asks back
    based best better come could etc give given goes going help helps know new next old part
    put really say see seem set show shows still sure take tell try well work works yet
    task tasks user users skill skills tool tools file files when whenever
    """.split()
)
CJK_STOP_PAIRS = frozenset(
    """
    一个 一下 什么 怎么 如何 可以 我们 你们 他们 这个 那个 这些 那些 帮我 请你 需要 使用 用于
    进行 以及 或者 还是 因为 所以 如果 然后 已经 没有 不是 就是 时候 的时 时使 用来 支持 相关
    """.split()
)


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def latin_keywords(text: str) -> set[str]:
    words = (_singular(w) for w in _WORD.findall(text.lower()) if len(w) >= 3)
    return {w for w in words if w not in STOP_WORDS and not w.isdigit()}


def cjk_pairs(text: str) -> set[str]:
    pairs: set[str] = set()
    for run in _CJK_RUN.findall(text):
        pairs.update(run[i : i + 2] for i in range(len(run) - 1))
    return pairs - CJK_STOP_PAIRS


def _cjk_hits(message: str, description_pairs: set[str]) -> set[str]:
    """Shared pairs, merged where they overlap in the message into one keyword each."""
    hits: set[str] = set()
    for run in _CJK_RUN.findall(message):
        span = ""
        for i in range(len(run) - 1):
            pair = run[i : i + 2]
            if pair in description_pairs:
                span = span + pair[1] if span else pair
            elif span:
                hits.add(span)
                span = ""
        if span:
            hits.add(span)
    return hits


def keyword_hits(message: str, description: str) -> set[str]:
    """The distinct keywords ``message`` shares with ``description``."""
    latin = latin_keywords(message) & latin_keywords(description)
    return latin | _cjk_hits(message, cjk_pairs(description))


def description_keywords(description: str) -> int:
    return len(latin_keywords(description)) + len(cjk_pairs(description))


def matches(message: str, description: str, *, minimum: int = 2) -> bool:
    """At least ``minimum`` distinct hits (fewer when the description has fewer keywords)."""
    need = min(minimum, description_keywords(description))
    return need > 0 and len(keyword_hits(message, description)) >= need


def invoked_names(message: str) -> list[str]:
    """``/name`` tokens in a message, in order (``/tmp/x`` paths do not count: see caller)."""
    return list(dict.fromkeys(_INVOKE.findall(message)))


def first_match(names: Iterable[str], wanted: str) -> str | None:
    lowered = wanted.lower()
    return next((n for n in names if n.lower() == lowered), None)
