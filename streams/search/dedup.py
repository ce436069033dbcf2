"""The same fact once per scope: the normalized text of an observation and its key.

Two texts are the same when they are equal after Unicode NFKC, case folding, dropping
punctuation and collapsing spaces ("Bob lives in Berlin." and "bob  lives in berlin"). A
live observation stores `text_key`, a digest of its scope and that normal form, under a
unique index that holds only live observations (a delete takes the key away), so two
concurrent writers cannot both store it. Near duplicates (a token-set similarity of at
least `SIMILAR_AT`) are stored, with `similar_to` naming the one they resemble.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

SIMILAR_AT = 0.9
_PUNCTUATION = re.compile(r"[^\w\s]|_", re.UNICODE)


def normalized_text(content: str) -> str:
    """NFKC, case-folded, punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", content).casefold()
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def text_key(scope_id: str, content: str) -> str:
    """The scope and the normal form as one key: equal keys are the same fact in one scope."""
    return f"{scope_id}:{_digest(content)}"


@lru_cache(maxsize=4096)  # an add compares its key with those of its scope's newest texts
def _digest(content: str) -> str:
    return hashlib.sha256(normalized_text(content).encode()).hexdigest()[:32]


@lru_cache(maxsize=4096)  # a pure function; each add compares with the same window of texts
def token_set(content: str) -> frozenset[str]:
    return frozenset(normalized_text(content).split())


def token_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' normalized word sets (1.0: the same words)."""
    left, right = token_set(a), token_set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)
