"""The consolidation answer's contradiction report: after the memory text a model may add
a `CONTRADICTIONS:` line, then `[id] [id]` per pair of the observations its prompt listed.

Part of the LLM port's protocol (the prompt asks for it, the providers answer it, the
consolidation run reads it); `streams.memory.consolidation_contradictions` acts on the
pairs. The offline provider reports what the deterministic check
(`streams.core.contradictions`) finds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from streams.core.contradictions import contradicts

HEADING = "CONTRADICTIONS:"
_HEADING_LINE = re.compile(r"^\s*CONTRADICTIONS:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
_ID = re.compile(r"\[([0-9a-fA-F]{24})\]")
MAX_PAIRS = 20  # per answer: a model listing more is not read further


def answer_split(text: str, offered: Iterable[str]) -> tuple[str, list[tuple[str, str]]]:
    """The memory text without the trailer, and the reported pairs of offered ids."""
    match = _HEADING_LINE.search(text)
    if match is None:
        return text, []
    memory = text[: match.start()].rstrip()
    wanted = set(offered)
    pairs: list[tuple[str, str]] = []
    for line in text[match.start() :].splitlines():
        ids = [i.lower() for i in _ID.findall(line)]
        if len(ids) == 2 and ids[0] != ids[1] and set(ids) <= wanted:
            pair = (ids[0], ids[1])
            if pair not in pairs and pair[::-1] not in pairs:
                pairs.append(pair)
        if len(pairs) >= MAX_PAIRS:
            break
    return memory, pairs


def answer_trailer(pairs: list[tuple[str, str]]) -> str:
    """What a model adds after the memory to report `pairs` ("" for none)."""
    if not pairs:
        return ""
    return "\n\n" + HEADING + "\n" + "\n".join(f"[{a}] [{b}]" for a, b in pairs)


def deterministic_pairs(observations: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`(id, text)` pairs, oldest first, that `streams.core.contradictions` finds contradicting:
    what the offline provider reports."""
    pairs = []
    for j, (newer_id, newer) in enumerate(observations):
        for older_id, older in observations[:j]:
            if newer_id and older_id and contradicts(newer, older):
                pairs.append((older_id, newer_id))
    return pairs[:MAX_PAIRS]
