"""The consolidation answer's question trailer: when the prompt lists questions the memory
must answer, the model adds after the memory a line `ANSWERS:` and one line per question,
in order, `Q<n>: <answer>` or `Q<n>: NOT STATED`.

Part of the LLM port's protocol, like `contradiction_answer`: the request builder asks
for it (`streams.memory.requests`), the providers answer it, the consolidation fold reads
it (`streams.memory.coverage`). A trailer that is missing, or does not give exactly one
line per question, is malformed: the version is stored and its coverage is unknown,
never a guessed answer. The offline provider answers from its own memory text: a
question is answered by the sentence that holds most of its content words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streams.llm.offline_text import significant_words, split_sentences, stem, word_set

HEADING = "ANSWERS:"
NOT_STATED = "NOT STATED"
MAX_ANSWER_CHARS = 300
_HEADING_LINE = re.compile(r"^\s*ANSWERS:\s*$", re.IGNORECASE | re.MULTILINE)
_NEXT_SECTION = re.compile(r"^\s*CONTRADICTIONS:", re.IGNORECASE | re.MULTILINE)
_ANSWER_LINE = re.compile(r"^\s*Q(\d{1,2})\s*[:.)]\s*(.*?)\s*$", re.IGNORECASE)
_NOT_STATED = re.compile(r"^(?:not stated|not answered|unknown|n/?a|none|-)\.?$", re.IGNORECASE)
# Words of a question that say what kind of answer, not what it is about.
QUESTION_WORDS = word_set(
    "what which who whom whose when where why how does do did is are was were has have "
    "this that these those user users person someone anyone they their them he she his her "
    "our we us currently now kind type name names any about should would could can"
)


@dataclass(frozen=True)
class AnswersRead:
    """The memory without the trailer and the answers (None: not stated), or `error`
    when the trailer is malformed (then `answers` is None)."""

    memory: str
    answers: list[str | None] | None
    error: str | None = None


def questions_block(questions: list[str]) -> str:
    """What the request builder adds to a consolidation prompt when questions are set."""
    listed = "\n".join(f"Q{n}. {q}" for n, q in enumerate(questions, start=1))
    return (
        "\n\n# Questions the memory must answer\n"
        f"{listed}\n\n"
        "After the memory (and after any CONTRADICTIONS lines), always add a line "
        f"{HEADING} and under it exactly one line per question, in order: Q<n>: and the "
        "answer in a few words exactly as the updated memory states it, or Q<n>: "
        f"{NOT_STATED} when the updated memory does not answer it. Do not answer from "
        "anything the memory does not say."
    )


def answers_split(text: str, count: int) -> AnswersRead:
    """Take the `ANSWERS:` section out of `text` and read `count` answers from it."""
    match = _HEADING_LINE.search(text)
    if match is None:
        if count == 0:
            return AnswersRead(text, [])
        return AnswersRead(text, None, "the answer has no ANSWERS: trailer")
    after = text[match.end() :]
    following = _NEXT_SECTION.search(after)
    section = after[: following.start()] if following else after
    rest = after[following.start() :] if following else ""
    memory = (text[: match.start()].rstrip() + ("\n\n" + rest.strip() if rest else "")).strip()
    if count == 0:
        return AnswersRead(memory, [])
    return _read(memory, section, count)


def _read(memory: str, section: str, count: int) -> AnswersRead:
    found: dict[int, str | None] = {}
    for line in section.splitlines():
        if not line.strip():
            continue
        parsed = _ANSWER_LINE.match(line)
        if parsed is None:
            return AnswersRead(memory, None, f"a trailer line is not Q<n>: ({line.strip()[:60]!r})")
        number, answer = int(parsed[1]), parsed[2].strip()
        if not 1 <= number <= count or number in found or not answer:
            return AnswersRead(memory, None, f"the trailer's Q{number} is out of place or empty")
        found[number] = None if _NOT_STATED.match(answer) else answer[:MAX_ANSWER_CHARS]
    if len(found) != count:
        return AnswersRead(
            memory, None, f"the trailer answers {len(found)} of the {count} questions"
        )
    return AnswersRead(memory, [found[n] for n in range(1, count + 1)])


def answers_trailer(answers: list[str | None]) -> str:
    """What a model adds after the memory to answer the questions ("" for none)."""
    if not answers:
        return ""
    lines = [f"Q{n}: {a or NOT_STATED}" for n, a in enumerate(answers, start=1)]
    return "\n\n" + HEADING + "\n" + "\n".join(lines)


def content_stems(text: str) -> set[str]:
    """The stems a question (or a sentence) is about."""
    return {stem(w) for w in significant_words(text, extra_stopwords=QUESTION_WORDS)}


COMMON_SHARE = 0.5  # a stem in more of the memory's sentences than this says nothing
COMMON_MIN_SENTENCES = 4


def offline_answers(
    memory: str, questions: list[str], *, discount_common: bool = True
) -> list[str | None]:
    """Each question's answer in `memory`: the sentence sharing most of its content stems,
    when it shares at least half of them (the earliest on a tie); else not stated.

    With `discount_common`, a stem most of the memory's sentences hold (the user's name
    in an individual memory) is not counted, unless it is all the question has: "What
    pet does Caroline have?" must match "pet", not just "Caroline"."""
    sentences = split_sentences(memory)
    stems = [content_stems(s) for s in sentences]
    common: set[str] = set()
    if discount_common and len(sentences) >= COMMON_MIN_SENTENCES:
        counts: dict[str, int] = {}
        for held in stems:
            for one in held:
                counts[one] = counts.get(one, 0) + 1
        common = {w for w, n in counts.items() if n > COMMON_SHARE * len(sentences)}
    found: list[str | None] = []
    for question in questions:
        wanted = content_stems(question)
        wanted = (wanted - common) or wanted
        best, best_share = None, 0.0
        for sentence, held in zip(sentences, stems, strict=True):
            share = len(wanted & held) / len(wanted) if wanted else 0.0
            if share > best_share:
                best, best_share = sentence, share
        found.append(best.strip() if best is not None and best_share >= 0.5 else None)
    return found
