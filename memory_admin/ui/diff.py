"""Side-by-side word diffs of two texts (consolidation versions, prompt versions)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

TOKEN = re.compile(r"\s+|[^\s]+")
MAX_DIFF_CHARS = 40_000  # beyond this both sides are shown whole, unmarked


@dataclass(frozen=True)
class Segment:
    kind: str  # "same" | "removed" | "added"
    text: str


@dataclass(frozen=True)
class SideBySide:
    left: list[Segment]
    right: list[Segment]
    changed: bool
    added_words: int
    removed_words: int


def side_by_side(old: str, new: str) -> SideBySide:
    """The old text with removed words marked, beside the new text with added words marked."""
    if len(old) + len(new) > MAX_DIFF_CHARS:
        return SideBySide([Segment("same", old)], [Segment("same", new)], old != new, 0, 0)
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    left: list[Segment] = []
    right: list[Segment] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            left.append(Segment("same", before))
            right.append(Segment("same", after))
            continue
        if before:
            left.append(Segment("removed", before))
            removed += len(before.split())
        if after:
            right.append(Segment("added", after))
            added += len(after.split())
    return SideBySide(left, right, old != new, added, removed)
