"""What the machine believes it wrote (the ledger), and what every surface showed after a
step (the snapshot) that the invariants compare it with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.every_path.texts import Text

SHARED = ("group", "collective", "shard")


@dataclass
class Entry:
    """One text the machine sent, where it went, and what became of it."""

    text: Text
    what: str  # "observation", "pin" or "edit" (a hand edit of a consolidation)
    scope_type: str
    scope_id: str
    owner: str | None  # the user it is about (forget removes it), None for shared adds
    acked: bool  # the API acknowledged it as written
    step: int
    rule: str
    observation_id: str | None = None
    client_id: str | None = None
    approved: bool = False  # a person approved it in review (it may be live in a shared scope)
    rejected: bool = False
    private: bool = False
    removed_at: int | None = None  # deleted, edited away or expired at this step
    removed_by: str | None = None
    forgotten_at: int | None = None
    replaced: bool = False  # a pin list that a later PUT replaced
    edited: bool = False  # its text was changed (the new text is an entry of its own)
    superseded_at: int | None = None  # replaced by a newer one (kept, not current) at this step
    # Users an observation stays about after a move (it keeps `related_user_ids`): forgetting
    # any of them removes it, as forgetting its owner does.
    about: set[str] = field(default_factory=set)

    @property
    def live_observation(self) -> bool:
        return (
            self.what == "observation"
            and self.acked
            and not self.edited
            and self.removed_at is None
            and self.forgotten_at is None
        )

    def describe(self) -> str:
        return (
            f"{self.text.kind} text {self.text.marker} ({self.what}, {self.scope_type}, "
            f"written by {self.rule} at step {self.step})"
        )


@dataclass
class Surface:
    """One answer or page: where it came from and its text."""

    where: str
    text: str
    shared: bool = False  # a shared scope's context section, search hit or consolidation


@dataclass
class Snapshot:
    """Everything the checks read after one step."""

    step: int
    surfaces: list[Surface] = field(default_factory=list)
    webhooks: list[tuple[float, str]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)  # every status
    pins: dict[str, list[str]] = field(default_factory=dict)  # scope id -> pins

    def add(self, where: str, value: Any, *, shared: bool = False) -> None:
        import json

        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        self.surfaces.append(Surface(where, text, shared))

    def holding(self, needle: str, *, shared_only: bool = False) -> list[str]:
        """The surfaces whose text holds `needle`."""
        return [
            s.where for s in self.surfaces if needle in s.text and (s.shared or not shared_only)
        ]

    def excerpt(self, needle: str, where: str, width: int = 160) -> str:
        """The text around `needle` on the surface `where` (a failing check shows it)."""
        for s in self.surfaces:
            if s.where == where and needle in s.text:
                at = s.text.index(needle)
                return s.text[max(0, at - width) : at + width]
        return ""

    def webhooks_holding(self, needle: str, *, since: float) -> list[str]:
        return [
            f"webhook body at step {n}"
            for n, body in self.webhooks
            if n >= since and needle in body
        ]
