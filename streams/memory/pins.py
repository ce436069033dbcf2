"""Pins: sentences of a scope's consolidation that every later version holds word for word.

An operator pins sentences (or saves a hand edit "and pin"); every version committed
afterwards (a threshold run, a rebuild, a restore, a hand edit) holds each pin: one the
text dropped is put back at its end. Pins count toward the scope's word limit: a pin set
over it is refused, and a text that would overflow with its pins put back loses its own
last sentences instead (the version says so in its warning).
"""

from __future__ import annotations

import re

from streams.core.exceptions import InvalidInput
from streams.search.dedup import normalized_text

MAX_PINS = 50
MAX_PIN_CHARS = 1_000
WORD = re.compile(r"\S+")
SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def word_count(text: str) -> int:
    return len(WORD.findall(text))


def pins_checked(pins: list[str], *, max_words: int) -> list[str]:
    """The pins to store (stripped, each once, in order), or InvalidInput naming the problem."""
    if len(pins) > MAX_PINS:
        raise InvalidInput(f"at most {MAX_PINS} pins", details=[{"field": "pins"}])
    checked: list[str] = []
    for n, raw in enumerate(pins):
        pin = " ".join(raw.split())
        if not pin or len(pin) > MAX_PIN_CHARS:
            raise InvalidInput(
                f"a pin holds 1 to {MAX_PIN_CHARS} characters", details=[{"field": f"pins.{n}"}]
            )
        if pin not in checked:
            checked.append(pin)
    words = sum(word_count(p) for p in checked)
    if words > max_words:
        raise InvalidInput(
            f"the pins hold {words} words; this scope's consolidation allows {max_words}",
            details=[{"field": "pins", "words": words, "max_words": max_words}],
        )
    return checked


def with_pins(text: str, pins: list[str], *, max_words: int) -> tuple[str, str | None]:
    """`text` holding every pin word for word, within `max_words`; and a warning when a
    pin had to be put back or the text cut to make room for them (None otherwise)."""
    text = text.strip()
    if not pins:
        return text, None
    missing = [p for p in pins if p not in text]
    joined = "\n".join([text, *missing]).strip() if missing else text
    if word_count(joined) <= max_words:
        warning = f"{len(missing)} pinned sentence(s) put back" if missing else None
        return joined, warning
    rest = text
    for pin in pins:
        rest = rest.replace(pin, " ")
    budget = max_words - sum(word_count(p) for p in pins)
    kept = _cut(" ".join(rest.split()), budget)
    return (
        "\n".join(p for p in [kept, *pins] if p).strip(),
        f"pinned sentences kept; the rest cut to {word_count(kept)} words to fit the limit",
    )


def _cut(text: str, limit: int) -> str:
    """The text up to the last sentence end within `limit` words (at the limit if none)."""
    spans = list(WORD.finditer(text))
    if len(spans) <= limit:
        return text
    if limit <= 0:
        return ""
    head = text[: spans[limit - 1].end()]
    ends = list(SENTENCE_END.finditer(head))
    return (head[: ends[-1].end()] if ends else head).strip()


def sentences(text: str) -> list[str]:
    """The sentences of a text, as a pin quotes them."""
    return [s.strip() for s in SENTENCE.findall(text) if s.strip()]


def new_sentences(old: str | None, new: str) -> list[str]:
    """The sentences of `new` that `old` did not hold (what a hand edit added)."""
    before = old or ""
    return [s for s in sentences(new) if s not in before]


def pin_quotes(pin: str, content: str) -> bool:
    """Whether a pin quotes an observation (either holds the other, normalized)."""
    a, b = normalized_text(pin), normalized_text(content)
    return bool(a and b) and (b in a or a in b)
