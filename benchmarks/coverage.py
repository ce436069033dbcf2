"""Question coverage against a hand-labelled answer key, and what the `ANSWERS:` trailer
costs (issue 38, item 6). No store: the consolidation request is built by
`streams.memory.requests` and answered by the offline provider, as a run would.

For each speaker of the three LoCoMo dev conversations, the speaker's observations are
folded one session at a time into an individual memory (the code's default template,
5000 words so nothing is cut for length), asking that speaker's three questions of
`benchmarks/data/coverage_key.json`. Each version's coverage (answered / not) is compared
with the key: the question is answered once the key's `from_session` is folded in.

The trailer's cost: the same requests built without questions, the prompt and the answer
token estimates (the offline provider's four characters a token) per consolidation.

`python -m benchmarks coverage` prints the agreement with the offline reading's
common-stem discount (a stem most sentences hold, the user's name, is not counted) and
without it, then the cost table.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.fidelity import CONVERSATIONS, LOCOMO
from benchmarks.harness import print_table
from streams.llm.answers_trailer import answers_split, offline_answers
from streams.llm.contradiction_answer import answer_split
from streams.llm.offline import OfflineProvider, estimate_tokens
from streams.llm.port import ConsolidationContext, DatedObservation
from streams.memory.requests import consolidation_request
from streams.prompts import DEFAULT_TEMPLATES

KEY = Path(__file__).resolve().parent / "data" / "coverage_key.json"
MAX_WORDS = 5000
START = datetime(2026, 1, 1, tzinfo=UTC)


def _sessions(conversation: dict[str, Any], speaker: str) -> list[tuple[int, list[str]]]:
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)_observation", key)
        if match and isinstance(value, dict):
            items = [i[0].strip() for i in value.get(speaker, []) if i and i[0].strip()]
            if items:
                found.append((int(match[1]), items))
    return sorted(found)


def _fold(
    current: str | None, number: int, items: list[str], questions: list[str]
) -> tuple[str, list[str | None] | None, dict[str, int]]:
    """One consolidation with and without the questions: the memory, the answers, tokens."""
    observations = [
        DatedObservation(text, START + timedelta(days=number), f"{number:012d}{i:012d}")
        for i, text in enumerate(items)
    ]
    tokens: dict[str, int] = {}
    answers: list[str | None] | None = None
    memory = ""
    for asked in ([], questions):
        context = ConsolidationContext(
            scope_description="individual memory of the speaker",
            current=current,
            observations=observations,
            max_words=MAX_WORDS,
            questions=asked,
        )
        request = consolidation_request(
            template=DEFAULT_TEMPLATES["consolidation"], context=context
        )
        answer = OfflineProvider().complete(request)
        side = "with" if asked else "without"
        tokens[f"prompt_{side}"] = estimate_tokens(request.prompt)
        tokens[f"completion_{side}"] = estimate_tokens(answer.text)
        read = answers_split(answer.text, len(asked))
        memory, _pairs = answer_split(read.memory, [o.id or "" for o in observations])
        answers = read.answers
    return memory, answers, tokens


def measure(*, discount: bool = True) -> tuple[dict[str, dict[str, int]], list[dict[str, int]]]:
    """Agreement counts per conversation (and "all"), and the tokens of every fold."""
    key = json.loads(KEY.read_text(encoding="utf-8"))["questions"]
    scores: dict[str, dict[str, int]] = {}
    costs: list[dict[str, int]] = []
    for name in CONVERSATIONS:
        conversation = json.loads((LOCOMO / f"{name}.json").read_text(encoding="utf-8"))
        for speaker in sorted({q["speaker"] for q in key if q["conversation"] == name}):
            labelled = [q for q in key if q["conversation"] == name and q["speaker"] == speaker]
            questions = [q["question"] for q in labelled]
            current: str | None = None
            for number, items in _sessions(conversation, speaker):
                current, answers, tokens = _fold(current, number, items, questions)
                if not discount:  # the same memory read without the discount
                    answers = offline_answers(current, questions, discount_common=False)
                costs.append(tokens)
                for label, answer in zip(labelled, answers or [None] * 3, strict=True):
                    expected = number >= label["from_session"]
                    _count(scores, name, expected=expected, found=answer is not None)
    return scores, costs


def _count(scores: dict[str, dict[str, int]], name: str, *, expected: bool, found: bool) -> None:
    for bucket in (name, "all"):
        row = scores.setdefault(bucket, {"cases": 0, "agree": 0, "fp": 0, "fn": 0, "key": 0})
        row["cases"] += 1
        row["key"] += expected
        row["agree"] += expected == found
        row["fp"] += found and not expected
        row["fn"] += expected and not found


def run(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks coverage")
    parser.parse_args(argv or [])
    logging.getLogger("streams.llm").setLevel(logging.WARNING)
    for discount in (True, False):
        scores, costs = measure(discount=discount)
        rows = [
            [
                bucket,
                r["cases"],
                r["key"],
                f"{r['agree'] / r['cases']:.3f}",
                r["fp"],
                r["fn"],
            ]
            for bucket, r in sorted(scores.items(), key=lambda kv: kv[0] == "all")
        ]
        print_table(
            f"Coverage against the answer key ({KEY.name}; offline provider; "
            f"common-stem discount {'on' if discount else 'off'})",
            [
                "conversation",
                "version x question",
                "key: answered",
                "agreement",
                "answered, key not",
                "not answered, key yes",
            ],
            rows,
        )
    n = len(costs)
    mean = {k: sum(c[k] for c in costs) / n for k in costs[0]}
    print_table(
        f"The ANSWERS: trailer's cost per consolidation ({n} consolidations, 3 questions)",
        ["tokens", "without questions", "with questions", "added", "added %"],
        [
            [
                side,
                f"{mean[f'{side}_without']:.0f}",
                f"{mean[f'{side}_with']:.0f}",
                f"{mean[f'{side}_with'] - mean[f'{side}_without']:.0f}",
                f"{100 * (mean[f'{side}_with'] / mean[f'{side}_without'] - 1):.1f}",
            ]
            for side in ("prompt", "completion")
        ],
    )
