"""Model answers checked before they become memory (issue 39).

Real small models answered a consolidation with the prompt's own task list, with the
prompt's `[date] [id]` observation lines, with a bare `UPDATED MEMORY`, or with a text
that left most of what it absorbed out (`shared/data/real-model-answers`). Each of those
was stored as the scope's memory and sent in every context. A consolidation answer is
refused here instead (`AnswerRefused`, an `LLMError`: the job fails and is retried,
pending stays pending, no version is written, the job says why) when it:

- `echo`: repeats lines of the prompt's instructions (a run of `ECHO_WORDS` words of the
  template);
- `log_lines`: copies the prompt's observation lines (an observation id in brackets, or a
  line opening with a bracketed date);
- `no_sentence`: holds no sentence of its own (headings and the above left out);
- `below_floor`: states less than the floor share of the observations it absorbs
  (`streams.memory.fidelity`; `MEMORY_FIDELITY_FLOOR`, 0 turns it off) while leaving room
  under the scope's word limit. A text that fills the limit (`FULL_SHARE` of it) left out
  what the limit could not hold: it is kept, its dropped facts recorded as every
  version's are. Refused, a pending set larger than the limit holds never consolidated:
  each run failed and was retried (the offline provider on 60 chat lines, 500 words).

An extraction that returns nothing for a conversation in which the offline rules find
facts is `EmptyExtraction` (the formation fails, the messages stay unformed, it is
counted `empty` per model and prompt version), never a silent success.

A contradiction pair the model reports is kept only when its two texts share a subject
(`pair_shares_subject`, the deterministic check's subject words); the others are counted
as rejected.
"""

from __future__ import annotations

import re
from typing import Literal

from streams.core.contradictions import values_and_subject
from streams.llm.offline_extraction import extract_observations
from streams.llm.offline_text import word_count
from streams.llm.port import ExtractionContext, LLMError
from streams.memory.fidelity import consolidation_fidelity

DEFAULT_FIDELITY_FLOOR = 0.5
ECHO_WORDS = 6  # a run this long copied from the instructions is an echo
MIN_SENTENCE_WORDS = 3
FULL_SHARE = 0.8  # of the word limit: a text this long was cut by the limit, not by the model
SUBJECT_SHARE = 0.5  # of the smaller subject, shared, for a pair to be about one thing
Refusal = Literal["echo", "log_lines", "no_sentence", "below_floor"]
_ID = re.compile(r"\[[0-9a-fA-F]{24}\]")
_DATED = re.compile(r"^\s*(?:[-*•]\s*)?\[\d{4}-\d{2}-\d{2}\]")
_WORDS = re.compile(r"[a-z0-9]+")
_LETTER = re.compile(r"[A-Za-z]")


class AnswerRefused(LLMError):
    """A model answer that must not become memory; `code` says which check refused it."""

    def __init__(self, code: Refusal, message: str) -> None:
        super().__init__(f"consolidation answer refused ({code}): {message}")
        self.code: Refusal = code
        self.prompt_version: int | None = None  # set by the fold that asked


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1)}


def _is_heading(line: str) -> bool:
    bare = line.strip().lstrip("#").strip()
    return not bare or bare.endswith(":") or bare.upper() == bare


def consolidation_answer_check(
    *,
    answer: str,
    text: str,
    template: str,
    previous: str | None,
    absorbed: list[tuple[str, str]],
    floor: float = DEFAULT_FIDELITY_FLOOR,
    limit: int | None = None,
) -> None:
    """Raise `AnswerRefused` when `answer` (the model's memory part) or `text` (what would
    be stored of it) must not become the scope's memory; `absorbed` are the folded
    observations `(id, content)`, `limit` the scope's word limit."""
    instructions = _shingles(_words(template))
    echoed: list[str] = []
    logged: list[str] = []
    own: list[str] = []
    for line in answer.splitlines():
        words = _words(line)
        if len(words) >= ECHO_WORDS and _shingles(words) & instructions:
            echoed.append(line.strip())
        elif _ID.search(line) or _DATED.match(line):
            logged.append(line.strip())
        elif not _is_heading(line) and len(words) >= MIN_SENTENCE_WORDS and _LETTER.search(line):
            own.append(line.strip())
    if echoed:
        raise AnswerRefused(
            "echo",
            f"it repeats the prompt's instructions ({len(echoed)} line(s), e.g. "
            f"{echoed[0][:80]!r})",
        )
    if logged:
        raise AnswerRefused(
            "log_lines",
            f"it copies the prompt's observation lines with their ids or dates "
            f"({len(logged)} line(s)) instead of writing the memory",
        )
    if not own:
        raise AnswerRefused("no_sentence", f"it holds no sentence of its own ({answer[:40]!r})")
    fidelity = consolidation_fidelity(previous=previous, text=text, absorbed=absorbed)
    full = limit is not None and word_count(text) >= FULL_SHARE * limit
    if absorbed and fidelity.stated_share < floor and not full:
        missing = len(fidelity.unstated_observation_ids)
        raise AnswerRefused(
            "below_floor",
            f"it leaves {missing} of the {len(absorbed)} observations it absorbs "
            f"unstated (stated {fidelity.stated_share:.0%}, floor {floor:.0%})",
        )


def pair_shares_subject(first: str, second: str) -> bool:
    """Whether two texts are about one thing: at least `SUBJECT_SHARE` of the smaller
    one's words (the deterministic check's values and subject words, without the small
    function words) are in both. "Standup is on Mondays" / "Standup is on Tuesdays"
    share one of two; "Gene uses the desktop app on Linux" / "The Eden Team changes its
    on-call rotation every Wednesday" share none."""
    a, b = (set().union(*values_and_subject(text)) for text in (first, second))
    if not a or not b:
        return False
    return len(a & b) / min(len(a), len(b)) >= SUBJECT_SHARE


class EmptyExtraction(LLMError):
    """An extraction answer with no observations where the offline rules find some."""


def extraction_expected(context: ExtractionContext) -> int:
    """How many observations the offline rules find in this extraction's conversation."""
    return len(extract_observations(context))
