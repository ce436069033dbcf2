"""Text to search terms: Unicode words, lowercased, English stop words out, Snowball stems.

The same function indexes observations on write and analyses queries, so a
query term matches exactly what was indexed, on any store.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import lru_cache
from typing import Any

import snowballstemmer

WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERM_CHARS = 40  # longer "words" (hashes, base64) are noise and bloat the index

_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing don down
    during each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just let me more most my myself no nor
    not now of off on once only or other ought our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours yourself yourselves s t ll re ve d m
    also yes ok okay oh hey hi hello really thanks thank please get got just like
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())

_local = threading.local()


def _stemmer() -> Any:
    """This thread's Snowball stemmer: a stemmer keeps the word it works on in itself, so
    the threads of a web process sharing one mixed their words (an IndexError, or
    silently another word's stem, which the cache then kept)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


def tokens(text: str) -> list[str]:
    """The words of `text`, lowercased (apostrophes split words: "didn't" -> "didn", "t")."""
    return [w for w in WORD.findall(text.lower()) if "_" not in w or w.strip("_")]


def term_counts(text: str) -> Counter[str]:
    """Stemmed terms of `text` with their frequencies; stop words and 1-letter words left out."""
    counts: Counter[str] = Counter()
    for word in tokens(text):
        word = word.strip("_")
        if word in STOP_WORDS or len(word) > MAX_TERM_CHARS:
            continue
        if len(word) == 1 and not word.isdigit():
            continue
        counts[stem(word)] += 1
    return counts


def query_terms(text: str, *, limit: int = 12) -> list[str]:
    """A query's distinct terms, in order of first appearance, at most `limit` of them."""
    return list(term_counts(text))[:limit]
