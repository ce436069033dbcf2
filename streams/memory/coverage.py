"""Question coverage of a consolidation version: for each question the scope's memory must
answer (`streams.prompts.questions`), the answer the consolidation call gave in its
`ANSWERS:` trailer (`streams.llm.answers_trailer`) and a status:

- `answered`: the trailer answers it;
- `unanswered`: the trailer says the memory does not state it;
- `lost`: unanswered now, answered by the previous version (the version is marked);
- `unknown`: the trailer was missing or malformed; the version is stored, no answer is
  guessed, and the job's result says so.

Computed at commit from what the fold read; no extra model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ANSWERED, UNANSWERED, LOST, UNKNOWN = "answered", "unanswered", "lost", "unknown"


def version_coverage(
    *,
    questions: list[str],
    answers: Sequence[str | None] | None,
    previous: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One entry per question, in order; `answers` None: the trailer was unreadable."""
    if answers is None:
        return [{"question": q, "answer": None, "status": UNKNOWN} for q in questions]
    before = {entry.get("question"): entry.get("status") for entry in previous}
    coverage = []
    for question, answer in zip(questions, answers, strict=True):
        if answer:
            status = ANSWERED
        elif before.get(question) == ANSWERED:
            status = LOST
        else:
            status = UNANSWERED
        coverage.append({"question": question, "answer": answer, "status": status})
    return coverage


def coverage_lost(coverage: list[dict[str, Any]]) -> list[str]:
    """The questions this version stopped answering."""
    return [entry["question"] for entry in coverage if entry.get("status") == LOST]


def coverage_summary(coverage: list[dict[str, Any]]) -> dict[str, int]:
    """Counts per status, for a job's result and the pages."""
    counts = {ANSWERED: 0, UNANSWERED: 0, LOST: 0, UNKNOWN: 0}
    for entry in coverage:
        counts[entry.get("status", UNKNOWN)] = counts.get(entry.get("status", UNKNOWN), 0) + 1
    return counts
