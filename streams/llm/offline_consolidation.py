"""Rule-based consolidation for the offline provider: fold observations into short prose.

The current text and the new observations (oldest first) become one timeline of
sentences. Exact repeats keep only their newest copy; a newer sentence about the same
subject replaces older ones ("newer wins"); the oldest sentences go first when the text
is over the word limit. Sentences are kept in time order, each closed by a period.

"The same subject" is decided by a few patterns, in this order:
1. an attribute, "<owner>'s <attribute> is ..." or "The/Our <attribute> is ...": one value
   per owner and attribute;
2. a subject and a known predicate ("Gene prefers", "Eden Team uses", "Gene lives in"):
   single-valued predicates (name, location, employer, role) keep one value; the others
   (prefers, likes, uses, plans, asks, "is <verb>ing") are replaced only by a newer
   sentence that shares a content word of the object ("short answers" / "long answers"),
   or by a correction ("now", "instead", "no longer", ...), which replaces the nearest one;
3. otherwise the first three content words after any "X said:" attribution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.llm.offline_text import (
    capitalise,
    end_sentence,
    normalise,
    significant_words,
    split_sentences,
    stem,
    truncate_words,
    word_count,
)
from streams.llm.port import ConsolidationContext

_I = re.IGNORECASE
_SUBJECT = r"(?P<subj>[^\s:;,]+(?:\s+[^\s:;,]+){0,3}?)"
_ADVERBS = r"(?:(?:now|also|still|really|usually|always|actually|currently|no longer)\s+)*"
# (predicate phrases, family, single-valued); longer phrases first where they overlap.
_PREDICATES: list[tuple[str, str, bool]] = [
    ("wants to be called|asks to be called|is called|goes by", "name", True),
    ("lives in|lives|is based in|is based|is from|moved to|relocated to", "location", True),
    ("works at|works for|joined", "employer", True),
    ("works as", "role", True),
    ("prefers|would rather|would prefer", "prefer", False),
    (
        "likes|loves|enjoys|hates|dislikes|doesn't like|does not like|no longer likes|can't stand",
        "like",
        False,
    ),
    ("uses|is using|switched to|is switching to|migrated to|is migrating to", "use", False),
    ("is going to|is planning to|plans to|will", "plan", False),
    ("asks not to|asks to", "instruction", False),
    (r"is (?P<ing>[a-z]+ing)", "is", False),
]
_PREDICATE_PATTERNS = [
    (re.compile(rf"^{_SUBJECT}\s+{_ADVERBS}(?:{phrases})\b(?P<obj>.*)$", _I), family, single)
    for phrases, family, single in _PREDICATES
]
_COPULA = r"\s+(?:is|are|was|were)\s+(?P<obj>(?![a-z]+ing\b).+)$"
_OWNED_ATTRIBUTE = re.compile(
    r"^(?P<owner>[^\s:;,]+(?:\s+[^\s:;,]+){0,2}?)'s\s+(?P<attr>[^:;,]+?)" + _COPULA, _I
)
_PLAIN_ATTRIBUTE = re.compile(r"^(?:the|our|their|his|her)\s+(?P<attr>[^:;,]+?)" + _COPULA, _I)
_ATTRIBUTION = re.compile(r"^[^:]{1,40}?\b(?:said|corrected|asked|noted|mentioned):\s*", _I)
_CORRECTION = re.compile(
    r"\b(?:now|instead|no longer|anymore|any more|switched|changed|actually|rather than)\b"
    r"|^[^:]{1,40}?\bcorrected:",
    _I,
)


@dataclass(frozen=True)
class Statement:
    """One sentence of the timeline, with what "newer wins" needs to compare it."""

    text: str
    key: tuple[str, ...] | None
    single: bool = True
    objects: frozenset[str] = frozenset()
    correction: bool = False

    def same_subject(self, older: Statement) -> bool:
        """Whether this (newer) sentence replaces `older` without further context."""
        if self.key is None or self.key != older.key:
            return False
        return self.single or bool(self.objects & older.objects)


def consolidate(context: ConsolidationContext) -> str:
    """The new consolidation text: the current one with the observations folded in."""
    sentences = split_sentences(context.current or "")
    for observation in context.observations:
        sentences.extend(split_sentences(observation.content))
    timeline = [parse(text) for text in (end_sentence(s) for s in sentences) if text]
    timeline = drop_replaced(drop_repeats(timeline))
    return " ".join(fit_words([s.text for s in timeline], context.max_words))


def parse(text: str) -> Statement:
    """The subject key of a sentence, following the module's rules in order."""
    text = capitalise(text)
    body = text.rstrip(".")
    correction = bool(_CORRECTION.search(body))
    for pattern in (_OWNED_ATTRIBUTE, _PLAIN_ATTRIBUTE):
        if (m := pattern.match(body)) and len(m["attr"].split()) <= 4:
            owner = normalise(m.groupdict().get("owner") or "")
            return Statement(text, ("attr", owner, normalise(m["attr"])), correction=correction)
    best: tuple[int, int, re.Match[str], str, bool] | None = None
    for order, (pattern, family, single) in enumerate(_PREDICATE_PATTERNS):
        if (m := pattern.match(body)) and (best is None or (m.end("subj"), order) < best[:2]):
            best = (m.end("subj"), order, m, family, single)
    if best is not None:
        _, _, m, family, single = best
        if family == "is":
            family = f"is {m['ing'].lower()}"
        objects = frozenset(stem(w) for w in significant_words(m["obj"]))
        key = ("pred", normalise(m["subj"]), family)
        return Statement(text, key, single, objects, correction)
    content = [stem(w) for w in significant_words(_ATTRIBUTION.sub("", body))]
    words_key = ("words", *content[:3]) if len(content) >= 3 else None
    return Statement(text, words_key, correction=correction)


def drop_repeats(timeline: list[Statement]) -> list[Statement]:
    """Sentences that say exactly the same thing keep only their newest position."""
    seen: set[str] = set()
    kept: list[Statement] = []
    for statement in reversed(timeline):
        norm = normalise(statement.text)
        if norm not in seen:
            seen.add(norm)
            kept.append(statement)
    return kept[::-1]


def drop_replaced(timeline: list[Statement]) -> list[Statement]:
    """Newer wins: every sentence removes the older ones on its subject.

    A replaced sentence still replaces what came before it: what it contradicted was
    already out of date when it was said.
    """
    replaced = [False] * len(timeline)
    for newer_index, newer in enumerate(timeline):
        nearest: int | None = None
        replaced_one = False
        for older_index in range(newer_index):
            older = timeline[older_index]
            if newer.same_subject(older):
                replaced[older_index] = replaced_one = True
            elif newer.correction and newer.key is not None and newer.key == older.key:
                nearest = older_index
        if nearest is not None and not replaced_one:  # a correction replaces its nearest
            replaced[nearest] = True
    return [s for s, gone in zip(timeline, replaced, strict=True) if not gone]


def fit_words(sentences: list[str], max_words: int) -> list[str]:
    """Drop the oldest sentences until the text fits; cut the last one if it alone is over."""
    kept = list(sentences)
    while len(kept) > 1 and sum(word_count(s) for s in kept) > max_words:
        kept.pop(0)
    if kept and word_count(kept[0]) > max_words:
        kept = [end_sentence(truncate_words(kept[0], max_words))] if max_words > 0 else []
    return [s for s in kept if s]
