"""When to search the observation log on the hot path: heuristics, never an LLM.

Each rule is a pure function that returns the reason it fired, so the API can say
why retrieval ran (or why not). Rules, in order: an explicit request to search memory
("search your memory", "check your notes", "what was decided"); an explicit recall phrase; a
question about the past; a question about someone named ("what does Melanie like?",
"when is Ana's birthday?"); a third-person question naming someone the memory knows
("why are flowers important to Melanie?"); two or more capitalised words the
consolidations do not contain (names the memory text does not cover, so the log may).

Not a rule: a definite description ("the upcoming grand opening", "the dancers in the
photo"). Measured on the labelled table and general questions, "the" + an anchor word
("upcoming", "recent") fired on "What are the upcoming holidays in France?", "the" + a
word the memory text holds fired on "How does the immune system work?" (recent turns
say "work"), and any multi-word "the ..." fired on most general questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Matched on the normalised message: lowercase, curly quotes straightened, every run of
# punctuation or space one space, padded with spaces (so " as i said " is a whole phrase).
RECALL_PHRASES = (
    "remember when",
    "remember what",
    "remember that",
    "remember the",
    "do you remember",
    "what did i say",
    "what did i tell",
    "what did i ask",
    "what did i mention",
    "what did we",
    "did i mention",
    "did i tell you",
    "did i say",
    "have i told you",
    "have i mentioned",
    "i told you",
    "i mentioned",
    "as i said",
    "like i said",
    "as i mentioned",
    "we discussed",
    "we talked about",
    "we spoke about",
    "we were talking about",
    "do you recall",
    "can you recall",
    "you said",
    "you told me",
    "you mentioned",
    "you suggested",
    "you recommended",
    "last time",
    "the other day",
    "remind me what",
    "remind me which",
    "remind me when",
    "remind me where",
    "remind me who",
    "remind me how",
    # Other languages' common recall phrases (accents kept; matched like the English ones).
    "te acuerdas",
    "recuerdas",
    "qué te dije",
    "que te dije",
    "tu te souviens",
    "vous vous souvenez",
    "tu te rappelles",
    "je t ai dit",
    "erinnerst du dich",
    "weißt du noch",
    "lembra",
    "ricordi",
)
# An explicit request to search memory (seed 004 §5.6): the user names the memory, or
# asks for a decision on record. Matched like the recall phrases.
MEMORY_REQUEST_PHRASES = (
    "search your memory",
    "search your memories",
    "search your notes",
    "search memory",
    "search the memory",
    "check your memory",
    "check your memories",
    "check your notes",
    "check the notes",
    "look in your memory",
    "look in your notes",
    "look through your notes",
    "look it up in your notes",
    "in your notes",
    "in your memory",
    "from your notes",
    "from your memory",
    "what was decided",
    "what has been decided",
    "what have we decided",
    "what we decided",
    "what was agreed",
    "what did we agree",
    "what we agreed",
    "tell me again what",
)
_LONGEST_FIRST = sorted(RECALL_PHRASES, key=len, reverse=True)  # the most telling reason
_REQUESTS_LONGEST_FIRST = sorted(MEMORY_REQUEST_PHRASES, key=len, reverse=True)
# Scripts without spaces between words: matched as substrings of the raw message.
RECALL_SUBSTRINGS = ("覚えて", "前に話した", "言ったっけ", "记得", "我说过", "我们讨论过", "기억")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


QUESTION_WORDS = _words("what when where who whom whose which why how did was were had have has")
PAST_MARKERS = _words(
    """
    did was were had ago yesterday earlier previously before used went said told asked
    mentioned bought made met saw took gave came chose decided liked loved wanted planned
    booked visited picked recommended suggested talked discussed thought felt found left
    moved started finished ate read wrote sent lost won paid spent tried happened
    """
)
PAST_PHRASES = ("last week", "last month", "last year", "last night", "last time")
SUBJECT_PAST = re.compile(r" (?:i|we|you|he|she|they) ([a-z]+[^e\s]ed) ")
QUESTION_MARKS = ("?", "？", "¿", "؟")

SENTENCE_END = set(".!?。？！…;\n")
OPENERS = set("¿¡«»\"'“”‘’„([{-–—")
WORD = re.compile(r"[^\W\d_][\w'’-]*")
NOT_A_WORD = re.compile(r"[^\w']+")


@dataclass(frozen=True)
class RetrievalDecision:
    triggered: bool
    reason: str  # e.g. "recall phrase: what did i tell", or why not


def retrieval_decide(*, message: str, known_text: str) -> RetrievalDecision:
    """Whether the message calls for a search of the log, and why (or why not)."""
    for rule in (memory_request, recall_phrase, past_question, person_question):
        reason = rule(message)
        if reason:
            return RetrievalDecision(triggered=True, reason=reason)
    reason = known_subject(message, known_text=known_text) or unknown_names(
        message, known_text=known_text
    )
    if reason:
        return RetrievalDecision(triggered=True, reason=reason)
    return RetrievalDecision(
        triggered=False,
        reason="no recall phrase, past-tense question, question about someone or unknown names",
    )


def normalise(text: str) -> str:
    straight = text.lower().replace("’", "'").replace("‘", "'")
    return " " + " ".join(NOT_A_WORD.sub(" ", straight).replace("'", " ").split()) + " "


def memory_request(message: str) -> str | None:
    """An explicit request to search memory: "Search your memory for my cat's name",
    "Check your notes about my cat", "Tell me what was decided"."""
    text = normalise(message)
    for phrase in _REQUESTS_LONGEST_FIRST:
        if f" {phrase} " in text:
            return f"explicit memory request: {phrase}"
    return None


def recall_phrase(message: str) -> str | None:
    text = normalise(message)
    for phrase in _LONGEST_FIRST:
        if f" {phrase} " in text:
            return f"recall phrase: {phrase}"
    for phrase in RECALL_SUBSTRINGS:
        if phrase in message:
            return f"recall phrase: {phrase}"
    return None


def past_question(message: str) -> str | None:
    """A question (a question mark, or a leading question word) about the past."""
    text = normalise(message)
    words = text.split()
    if not words:
        return None
    asked = [w for w in words if w in QUESTION_WORDS]
    if not asked or not (any(m in message for m in QUESTION_MARKS) or words[0] in QUESTION_WORDS):
        return None
    marker = next((w for w in words if w in PAST_MARKERS), None)
    if marker is None:
        marker = next((p for p in PAST_PHRASES if f" {p} " in text), None)
    if marker is None:
        match = SUBJECT_PAST.search(text)
        marker = match.group(1) if match else None
    if marker is None:
        return None
    return f"past-tense question: {asked[0]} + {marker}"


# A name next to an auxiliary ("does Melanie", "would Caroline", "Caroline has faced"):
# the subject of the question is a person (or something named like one).
AUXILIARY = r"(?i:do|does|did|has|have|had|is|was|are|were|would|will|can|could|should)"
NAMED_SUBJECT = re.compile(rf"\b{AUXILIARY}\s+([A-Z][^\W\d_][\w'’-]*)")
SUBJECT_NAMED = re.compile(rf"(?<=\w )([A-Z][^\W\d_][\w'’-]*)\s+{AUXILIARY}\b")


def _is_question(message: str, words: list[str]) -> bool:
    return any(m in message for m in QUESTION_MARKS) or (bool(words) and words[0] in QUESTION_WORDS)


def person_question(message: str) -> str | None:
    """A question about someone named: their name as its subject, or with a possessive
    ("Melanie's kids"). A question about a person is a memory question."""
    if not _is_question(message, normalise(message).split()):
        return None
    for match in [*NAMED_SUBJECT.finditer(message), *SUBJECT_NAMED.finditer(message)]:
        name = re.sub(r"['’]s$", "", match.group(1).rstrip("'’-"))
        if name.isupper() or re.fullmatch(r"I(?:['’]\w+)?", name):
            continue
        return f"question about someone: {name}"
    for name in capitalised_words(message):
        if not name.isupper() and re.search(rf"\b{re.escape(name)}['’]s\b", message):
            return f"question about someone: {name}"
    return None


FIRST_AND_SECOND_PERSON = _words("i me my mine we us our ours you your yours")


def known_subject(message: str, *, known_text: str) -> str | None:
    """A question about someone (or something) the memory names, asked in the third person:
    "how do I ... in Python?" is a task, "why are flowers important to Melanie?" is not."""
    words = normalise(message).split()
    if not _is_question(message, words) or FIRST_AND_SECOND_PERSON & set(words):
        return None
    known = normalise(known_text)
    for name in capitalised_words(message):
        if not name.isupper() and f" {normalise(name).strip()} " in known:
            return f"question about someone known: {name}"
    return None


def capitalised_words(message: str) -> list[str]:
    """Capitalised words that are not sentence-initial and not "I" (nor "I'm", "I've"...),
    in order, once each; ¿ ¡ « » 。 ？ and friends count as punctuation."""
    found: list[str] = []
    sentence_start = True
    position = 0
    for match in WORD.finditer(message):
        between = message[position : match.start()]
        position = match.end()
        if any(c in SENTENCE_END for c in between):
            sentence_start = True
        word = match.group().rstrip("'’-")
        initial, sentence_start = sentence_start, False
        if initial or not word[0].isupper():
            continue
        if word == "I" or re.fullmatch(r"I['’]\w+", word):
            continue
        word = re.sub(r"['’]s$", "", word)
        if word not in found:
            found.append(word)
    return found


def unknown_names(message: str, *, known_text: str) -> str | None:
    known = normalise(known_text)
    unknown = [w for w in capitalised_words(message) if normalise(w) not in known]
    if len(unknown) < 2:
        return None
    return "unknown names: " + ", ".join(unknown[:5])
