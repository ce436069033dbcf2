"""Item limits of one extraction call: each target's cap and word limit, and the drops.

One formation files observations in every scope of the conversation; each scope takes
at most its cap (grown with the conversation's tokens up to its ceiling) of at most its
words (`streams.memory.scope_limits`). The prompt states them per target, and an answer
past them loses the items beyond: counted by reason in the job result.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.core.documents import Agent, Scope
from streams.memory.scope_limits import kind_limits
from streams.store import MemoryStore


@dataclass
class ExtractionDrops:
    """Items an answer gave that are not stored, by why."""

    over_cap: int = 0  # past its target's cap (or the call's total)
    over_words: int = 0  # longer than its target's word limit
    unusable: int = 0  # no known scope, no text, not an object
    repeated: int = 0  # the same text twice in one scope

    @property
    def total(self) -> int:
        return self.over_cap + self.over_words + self.unusable + self.repeated

    def result(self) -> dict[str, int]:
        """What the job result records beside `dropped` (the total)."""
        return {"dropped_over_cap": self.over_cap, "dropped_over_words": self.over_words}


def target_limits(
    *,
    store: MemoryStore,
    agent: Agent | None,
    targets: list[tuple[str, str, Scope | None]],
    tokens: float,
) -> dict[str, tuple[int, int]]:
    """(cap, words) per target label: the scope's limits (or its kind's, for a scope not
    made yet), the cap grown with the conversation's `tokens`."""
    limits: dict[str, tuple[int, int]] = {}
    for label, kind, scope in targets:
        resolved = kind_limits(store=store, agent=agent, kind=kind, scope=scope)
        limits[label] = (resolved.cap_for(tokens), int(resolved.item_words.value))
    return limits


__all__ = ["ExtractionDrops", "target_limits"]
