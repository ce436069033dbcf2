"""`MEMORY_CONSOLIDATE_AFTER_DAYS`: fold pending observations that waited this long.

A scope below its consolidation threshold would otherwise wait forever (three pending
observations, one 12 days old). The periodic age sweep (`streams.memory.consolidation_age`)
consolidates a scope once its oldest pending observation is older than this many days,
whatever the count. Per scope type (`individual`, `group`, `collective`, `shard`), and a
scope's own `consolidate_after_days` overrides its type's; 0 turns it off.

The Django settings parse the setting and pass this object in; the domain reads no settings.
"""

from __future__ import annotations

from dataclasses import dataclass

SCOPE_KINDS = ("individual", "group", "collective", "shard")
DAYS_RANGE = (0, 3650)  # 0: never by age
DEFAULT_DAYS = 7


@dataclass(frozen=True)
class ConsolidateAfterDays:
    individual: int = DEFAULT_DAYS
    group: int = DEFAULT_DAYS
    collective: int = DEFAULT_DAYS
    shard: int = DEFAULT_DAYS

    def __post_init__(self) -> None:
        low, high = DAYS_RANGE
        for kind in SCOPE_KINDS:
            value = getattr(self, kind)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"consolidate after days: {kind}={value!r} is not {low}..{high}")

    def for_kind(self, kind: str) -> int:
        """The days for a scope kind (`Scope.kind`: a shard is not the collective)."""
        return int(getattr(self, kind))

    @property
    def smallest(self) -> int:
        """The fewest days of any kind that is on (0: every kind is off)."""
        on = [d for d in (getattr(self, k) for k in SCOPE_KINDS) if d > 0]
        return min(on, default=0)

    @classmethod
    def parse(cls, value: str | None) -> ConsolidateAfterDays:
        """`7` (every kind), or `individual=3,group=14,collective=30,shard=30` (a kind left
        out keeps the default of 7); empty: the default."""
        value = (value or "").strip().replace(" ", "")
        if not value:
            return cls()
        try:
            if "=" not in value:
                days = int(value)
                return cls(**{kind: days for kind in SCOPE_KINDS})
            parts = dict(p.split("=", 1) for p in value.split(",") if p)
            unknown = set(parts) - set(SCOPE_KINDS)
            if unknown:
                raise ValueError(f"unknown scope kind(s) {sorted(unknown)}")
            return cls(**{kind: int(days) for kind, days in parts.items()})
        except ValueError as exc:
            raise ValueError(
                "MEMORY_CONSOLIDATE_AFTER_DAYS must be days (0: off) or "
                f"individual=..,group=..,collective=..,shard=..: {exc}"
            ) from exc


DEFAULT_CONSOLIDATE_AFTER = ConsolidateAfterDays()

__all__ = ["DAYS_RANGE", "DEFAULT_CONSOLIDATE_AFTER", "SCOPE_KINDS", "ConsolidateAfterDays"]
