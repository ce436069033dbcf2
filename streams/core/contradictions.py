"""Contradictions: a new observation that says the same thing as a live one of its scope
with a different value ("Ada lives in Porto" / "Ada lives in Lisbon").

The check is deterministic, never the model: each text splits into its *values*
(numbers, dates, and capitalised words: names, places, months) and its *subject* (the
other words, lower-cased, without small function words). Two texts contradict when
their subjects are (nearly) the same, the subject names a single-valued relation (where
someone lives or works, an age, a date, a phone number, a price: `RELATIONS`), and
exactly one value differs on each side (one value swapped for another; two texts that
differ in several values are two facts, not a correction). It runs
on every write (`streams.memory.observations.observations_append`) against the scope's newest
observations, the window the near-duplicate check reads.

Both are flagged `contradicts` with each other's id. In a shared scope (group,
collective, shard) the newer waits for review with the reason `contradicts:<id>`:
people approve it (keep both, or delete the older: pick the newer), reject it (pick
the older) or edit it then approve. In an individual scope nothing waits: the flag
shows in the observation log and the newer wins (as consolidation already has it).
"""

from __future__ import annotations

import re
from functools import lru_cache

SUBJECT_OVERLAP = 0.75  # Jaccard of the subjects from which two texts say the same thing
MIN_SUBJECT_WORDS = 1
# Words of relations that hold one value at a time (a person lives in one city; likes
# are not among them: one likes many things).
RELATIONS = frozenset(
    [
        "live",
        "lives",
        "lived",
        "living",
        "moved",
        "moving",
        "move",
        "works",
        "work",
        "working",
        "worked",
        "job",
        "born",
        "birthday",
        "age",
        "old",
        "aged",
        "phone",
        "email",
        "address",
        "called",
        "named",
        "name",
        "title",
        "role",
        "salary",
        "costs",
        "cost",
        "price",
        "deadline",
        "due",
        "starts",
        "start",
        "begins",
        "ends",
        "meets",
        "meeting",
        "deploys",
        "deploy",
        "release",
        "releases",
        "located",
        "based",
        "manager",
        "boss",
        "married",
        "partner",
        "timezone",
        "office",
        "room",
        "favourite",
        "favorite",
    ]
)
_TOKEN = re.compile(r"[A-Za-z][\w'-]*|\d[\d.:/-]*")
_SMALL = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "as",
        "than",
        "then",
        "so",
        "very",
        "just",
        "also",
        "still",
        "now",
        "no",
        "not",
        "their",
        "his",
        "her",
        "our",
        "my",
        "your",
        "they",
        "he",
        "she",
        "we",
        "i",
        "you",
        "them",
        "him",
        "us",
        "me",
        "s",
    ]
)


# Every add compares its text with the scope's newest `SIMILAR_WINDOW` (50) texts, and 49
# of them were split for the add before: a pure function of the text, kept per process.
@lru_cache(maxsize=4096)
def values_and_subject(text: str) -> tuple[frozenset[str], frozenset[str]]:
    values: set[str] = set()
    subject: set[str] = set()
    for token in _TOKEN.findall(text):
        word = token.strip(".:/-'")
        if not word:
            continue
        if word[0].isdigit() or word[0].isupper():
            values.add(word.lower())
        elif word.lower() not in _SMALL:
            subject.add(word.lower())
    return frozenset(values), frozenset(subject)


def contradicts(new: str, old: str) -> bool:
    """Whether `new` gives a different value for what `old` says."""
    return _contradicts(values_and_subject(new), values_and_subject(old))


def _contradicts(
    new: tuple[frozenset[str], frozenset[str]], old: tuple[frozenset[str], frozenset[str]]
) -> bool:
    (new_values, new_subject), (old_values, old_subject) = new, old
    if len(new_subject) < MIN_SUBJECT_WORDS or len(old_subject) < MIN_SUBJECT_WORDS:
        return False
    overlap = len(new_subject & old_subject) / len(new_subject | old_subject)
    if overlap < SUBJECT_OVERLAP or not (new_subject & old_subject & RELATIONS):
        return False
    return len(new_values - old_values) == 1 and len(old_values - new_values) == 1


def first_contradicted(new: str, candidates: list[tuple[str, str]]) -> str | None:
    """The id of the first (newest) candidate `(id, content)` that `new` contradicts."""
    parts = values_and_subject(new)  # split once, not once per candidate
    for candidate_id, content in candidates:
        if _contradicts(parts, values_and_subject(content)):
            return candidate_id
    return None
