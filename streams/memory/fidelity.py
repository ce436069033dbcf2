"""Consolidation fidelity: what a new version no longer states.

A version folds observations into the previous text. Each absorbed observation, and
each sentence of the previous version, carries content: its *specific* words (names,
numbers, dates, rare words: what a reader could not guess) count `SPECIFIC_WEIGHT` times,
its other content words once, and a word several of the inputs hold counts for less
(divided by how many: "Caroline" in Caroline's memory says little about one fact). An
item is *unstated* when the new text holds less than `STATED_SHARE` of its weight.

Deterministic and pure (no model call, no store): `consolidation_commit` records it on
every version; the consolidation run refuses an answer below the floor
(`streams.memory.answer_checks`); the benchmark (`python -m benchmarks fidelity`)
measures it on labelled versions.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from streams.memory.pins import sentences

STATED_SHARE = 0.5  # an item is stated when the new text holds at least this share
RARE_LENGTH = 6  # a lower-case word this long or longer is specific
SPECIFIC_WEIGHT = 2.0  # a name, number, date or rare word counts this many plain words
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\d.,:/-]*")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


MONTHS = _wordset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday"
)
# Words a capital letter does not make specific (sentence starts, pronouns) and long
# words that say nothing about one fact.
COMMON = _wordset(
    """
    a an the and or but of in on at to for from by with is are was were be been being has have
    had do does did it its this that these those as than then so very just also still now no
    not their his her our my your they he she we i you them him us me there here what which who
    when where while after before about into over under again once each every some any all
    both more most other such only own same too can will would should could may might must
    shall user users people person someone something everything nothing really always never
    often usually sometimes recently currently because though although however whether
    another around through during without within between across toward towards against
    having being going doing making taking getting wants wanted likes liked loves loved
    thinks thought feels felt called says said told mentioned noted shared talked talking
    planning planned things thing little really pretty great important different
    """
)


@dataclass(frozen=True)
class Fidelity:
    """What a version no longer states: absorbed observations and previous sentences."""

    unstated_observation_ids: list[str] = field(default_factory=list)
    dropped_sentences: list[str] = field(default_factory=list)
    absorbed: int = 0  # how many observations were weighed (the rate's denominator)

    def to_dict(self) -> dict[str, list[str]]:
        return {
            "unstated_observation_ids": list(self.unstated_observation_ids),
            "dropped_sentences": list(self.dropped_sentences),
        }

    @property
    def stated_share(self) -> float:
        """The share of the absorbed observations the text states (1.0 with none)."""
        if not self.absorbed:
            return 1.0
        return 1 - len(self.unstated_observation_ids) / self.absorbed


def words_of(text: str) -> list[str]:
    """The text's words, normalised: lower case, no possessive, a light stem."""
    return [w for token in _TOKEN.findall(text) if (w := _normal(token))]


def _normal(token: str) -> str:
    word = token.lower().replace("’", "'").strip(".,:/-'")
    if word.endswith("'s"):
        word = word[:-2]
    if word[:1].isdigit():
        return word.replace(",", "")
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def specifics(text: str) -> set[str]:
    """The specific content of a text: numbers, dates, names (capitalised words that are
    not sentence starts or pronouns) and rare words, normalised as `words_of`."""
    found: set[str] = set()
    for token in _TOKEN.findall(text):
        word = _normal(token)
        if not word or word in COMMON:
            continue
        bare = token.lower().strip(".,:/-'’")
        dated = token[0].isdigit() or bare in MONTHS
        if dated or token[0].isupper() or len(bare) >= RARE_LENGTH:
            found.add(word)
    return found


def content_words(text: str) -> set[str]:
    """Every word that carries content: the specifics, and the other words of three
    letters or more that are not function words."""
    return {w for w in words_of(text) if w not in COMMON and (len(w) >= 3 or w[0].isdigit())}


def _weights(text: str) -> dict[str, float]:
    """A text's content words, a specific one counting `SPECIFIC_WEIGHT` times."""
    special = specifics(text)
    return {w: SPECIFIC_WEIGHT if w in special else 1.0 for w in content_words(text)}


def _stated(item: dict[str, float], held: set[str], spread: Counter[str]) -> bool:
    """At least `STATED_SHARE` of the item's weight is in the text; a word several inputs
    share weighs less (divided by how many hold it: the memory's subject says little)."""
    total = sum(weight / spread[w] for w, weight in item.items())
    if not total:
        return True  # nothing specific to lose
    kept = sum(weight / spread[w] for w, weight in item.items() if w in held)
    return kept / total >= STATED_SHARE


def consolidation_fidelity(
    *,
    previous: str | None,
    text: str,
    absorbed: list[tuple[str, str]],
    kept: list[str] | None = None,
) -> Fidelity:
    """The fidelity of `text` as the version after `previous`, absorbing `absorbed`
    (`(observation id, content)`, in order). `kept` are sentences that may leave on
    purpose (a rebuild's redacted ones, an unpin): never reported dropped."""
    held = set(words_of(text))
    old_sentences = [s for s in sentences(previous or "") if s.strip()]
    items = [_weights(content) for _, content in absorbed] + [_weights(s) for s in old_sentences]
    spread = Counter(word for item in items for word in item)
    unstated = [
        oid
        for (oid, _), item in zip(absorbed, items[: len(absorbed)], strict=True)
        if not _stated(item, held, spread)
    ]
    skip = set(kept or [])
    dropped = [
        sentence
        for sentence, item in zip(old_sentences, items[len(absorbed) :], strict=True)
        if sentence not in skip and not _stated(item, held, spread)
    ]
    return Fidelity(
        unstated_observation_ids=unstated,
        dropped_sentences=list(dict.fromkeys(dropped)),
        absorbed=len(absorbed),
    )
