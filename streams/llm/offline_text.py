"""Small text tools shared by the offline provider's rules: sentences, words, crude stems.

Plain string work with regular expressions and nothing else, so the offline provider
stays deterministic and dependency-free (no NLP models to download for a demo).
"""

from __future__ import annotations

import re


def word_set(text: str) -> frozenset[str]:
    """A set of words written as one string: long vocabularies stay readable."""
    return frozenset(text.split())


_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+|\s*\n+\s*")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_TERMINAL = re.compile(r"[\s.!?…;:,]+$")

STOPWORDS = word_set(
    """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he her here hers herself him himself his how i i'd i'll i'm i've if in into
    is isn't it it's its itself just let's me more most my myself no nor not now of off on
    once only or other ought our ours ourselves out over own same she should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they're this those through to too under until up very was wasn't we we're were weren't
    what when where which while who whom why will with won't would wouldn't you your yours
    yourself said says asks asked told really always never usually often still please
    """
)


def clean(text: str) -> str:
    """Collapse whitespace and straighten curly apostrophes, which users' keyboards insert."""
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").split())


def split_sentences(text: str) -> list[str]:
    """Sentences on terminal punctuation and line breaks; crude, but stable and predictable."""
    return [s for s in (clean(part) for part in _SENTENCE_BREAK.split(text or "")) if s]


def words(text: str) -> list[str]:
    """Lower-case word tokens, apostrophes kept inside words ("don't", "gene's")."""
    return _WORD.findall(clean(text).lower())


def word_count(text: str) -> int:
    """Words as the domain counts them: whitespace-separated tokens."""
    return len(text.split())


def normalise(text: str) -> str:
    """The comparison form: lower case, letters and digits only, single spaces."""
    return " ".join(re.findall(r"[a-z0-9]+", clean(text).lower()))


def contains(haystack: str, needle: str) -> bool:
    """Whether `needle` appears in `haystack`, ignoring case and punctuation, on word bounds."""
    small, big = normalise(needle), normalise(haystack)
    return bool(small) and f" {small} " in f" {big} "


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match "bugs" with "bug" and "requested" with "request"."""
    w = word.lower().removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 4 and w.endswith("ed"):
        return w[:-2]
    return w


def significant_words(text: str, *, extra_stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Content words, in order: what two sentences must share to be about the same thing."""
    return [w for w in words(text) if w not in STOPWORDS and w not in extra_stopwords]


def end_sentence(text: str) -> str:
    """The text with exactly one closing period, as consolidated prose wants it."""
    body = _TERMINAL.sub("", clean(text))
    return f"{body}." if body else ""


def close_sentence(text: str) -> str:
    """A period only where the text ends without terminal punctuation ("?" and "!" stay)."""
    body = clean(text).rstrip(" ,;:")
    return body if not body or body[-1] in ".!?…" else f"{body}."


def truncate_words(text: str, max_words: int) -> str:
    """At most `max_words` words, cut at a word boundary; a cut is marked with an ellipsis."""
    tokens = clean(text).split()
    if len(tokens) <= max_words:
        return clean(text)
    kept = " ".join(tokens[: max(max_words, 0)]).rstrip(" ,;:.-")
    return f"{kept}…" if kept else ""


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]
