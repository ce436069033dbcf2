"""Explicit remember and forget: a user's message that asks the memory to keep or drop
something. Heuristics on the text, never an LLM, like the retrieval triggers.

- **remember**: "Please remember that my scrum meeting is on 10 September.", "Don't forget
  my wife's name is Ana", "Note that I'm vegan". Formed at once, below the minimum
  message count (`streams.memory.formation`).
- **forget**: "Forget that", "Forget what I said about the blue theme", "Please forget my
  old address"; the topic ("the blue theme") names what to drop.

A request is an imperative at the start of a sentence, after polite or linking words
("please", "actually", "can you", "I want you to"). A question about the past ("Do you
remember my birthday?", "Remember when we planned the offsite?") is a recall, not a
request; "don't forget" asks to remember; "I forgot" asks nothing. Measured on the
labelled table `tests/streams/memory_request_cases.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from streams.search.retrieval import normalise

Kind = Literal["remember", "forget"]

SENTENCES = re.compile(r"[.!?;\n。？！]+")
# Words a request may follow at the start of its sentence (normalised: "i d" is "I'd").
PREFIX = (
    r"(?:(?:please|pls|kindly|actually|also|and|but|ok|okay|oh|hey|so|just|now|wait|no|"
    r"sorry|well|never mind|nevermind|one more thing|btw|by the way|"
    r"can you|could you|would you|will you|can you please|could you please|"
    r"i want you to|i d like you to|i would like you to|i need you to|you should|"
    r"you can|go ahead and|make sure to|make sure you) )*"
)
REMEMBER = re.compile(
    rf"^ {PREFIX}(?:remember|memorize|memorise|don t forget|do not forget|never forget|"
    r"keep in mind|note|make a note|take a note|note down|save|store|write down|"
    r"commit to memory)"
    r"(?: (?P<rest>.*))? $"
)
# After "remember" (or "note"...) a request says what: that, this, my ..., not a question
# word ("remember when", "remember what") or a past occasion ("remember that time").
REMEMBER_FOLLOWERS = {
    "that", "this", "my", "i", "me", "we", "for", "to", "our", "it", "these", "about",
    "down", "mine", "in", "the fact",
}  # fmt: skip
NOT_A_REQUEST = re.compile(
    r"^(?:that|the) (?:time|day|night|one|place|trip|week|weekend|evening|summer|year) "
)
FORGET = re.compile(
    rf"^ {PREFIX}(?:forget|erase|delete|remove|drop|unlearn|stop remembering)"
    r"(?: (?P<rest>.*))? $"
)
FORGET_TOPIC = re.compile(
    r"^(?:(?:everything |anything |all |what )?(?:i |we )?(?:said|told you|mentioned|"
    r"wrote|shared|know|you know|you remember|remember)(?: (?:you )?(?:about|of|on|"
    r"regarding|concerning))? |everything (?:about|on|regarding) |all about |about |"
    r"that |what you know about |what you remember about )?(?P<topic>.*)$"
)
# "delete", "remove" and "drop" ask about memory only when they say so.
MEMORY_WORDS = (" memory ", " memories ", " notes ", " what you know ", " what i said ",
                " what i told you ", " you remember ")  # fmt: skip
FORGET_VERBS_ALWAYS = ("forget", "unlearn", "stop remembering")
DEICTIC = {"", "that", "this", "it", "that please", "this please", "it please"}


@dataclass(frozen=True)
class MemoryRequest:
    kind: Kind
    reason: str  # the words that made it one, e.g. "remember: please remember that"
    topic: str | None = None  # forget: what to drop (None: the last thing said)


def memory_request_of(message: str) -> MemoryRequest | None:
    """The first explicit remember or forget request in the message, or None."""
    for sentence in SENTENCES.split(message):
        text = normalise(sentence)
        found = _remember(text) or _forget(text)
        if found is not None:
            return found
    return None


def asks_to_remember(message: str) -> bool:
    found = memory_request_of(message)
    return found is not None and found.kind == "remember"


def _remember(text: str) -> MemoryRequest | None:
    match = REMEMBER.match(text)
    if match is None:
        return None
    rest = (match.group("rest") or "").strip()
    words = rest.split()
    if not words:
        return None
    head = " ".join(words[:2])
    if words[0] not in REMEMBER_FOLLOWERS and head not in REMEMBER_FOLLOWERS:
        return None
    if NOT_A_REQUEST.match(rest + " "):
        return None
    if len(words) < 2 and words[0] != "this":
        return None
    return MemoryRequest(kind="remember", reason=f"remember: {text.strip()[:60]}")


def _forget(text: str) -> MemoryRequest | None:
    match = FORGET.match(text)
    if match is None:
        return None
    verb_part = text[: match.start("rest")] if match.group("rest") else text
    if not any(f" {v}" in verb_part for v in FORGET_VERBS_ALWAYS) and not any(
        w in text for w in MEMORY_WORDS
    ):
        return None  # "delete the file" is not about memory
    rest = (match.group("rest") or "").strip()
    if rest.split()[:1] == ["it"] or rest == "about it":
        return None  # "forget it": never mind
    topic_match = FORGET_TOPIC.match(rest)
    topic = (topic_match.group("topic") if topic_match else rest).strip()
    topic = re.sub(r" ?(?:from|in) (?:your|the) (?:memory|memories|notes)$", "", topic)
    topic = re.sub(r"^(?:please )|(?: please)$", "", topic).strip()
    return MemoryRequest(
        kind="forget",
        reason=f"forget: {text.strip()[:60]}",
        topic=None if topic in DEICTIC else topic,
    )


__all__ = ["MemoryRequest", "asks_to_remember", "memory_request_of"]
