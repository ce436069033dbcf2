"""The lines an observation was formed from, as support staff read them: text, speaker, time.

Observations formed since sentence-level provenance cite only the lines they came from;
older ones cite their whole batch and keep it. A page of observations costs one query per
session it cites (the unique `(agent, session, message id)` index), at most `MAX_SHOWN`
lines per observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from streams.core.documents import Observation
from streams.core.visibility import removal
from streams.store import MemoryStore

MAX_SHOWN = 5


@dataclass(frozen=True)
class CitedLine:
    message_id: str
    role: str
    speaker: str  # the speaker's name (or id) on a user line, else the role
    text: str
    at: datetime


@dataclass(frozen=True)
class Citation:
    lines: list[CitedLine]
    more: int  # cited ids beyond the lines shown (more than `MAX_SHOWN`, or no longer kept)


def cited_lines(*, store: MemoryStore, observations: list[Observation]) -> dict[str, Citation]:
    """Observation id -> the lines it cites (only observations formed from a session).

    A removed observation cites nothing: the lines it was made from would show its words
    (`streams.core.visibility`)."""
    observations = [o for o in observations if removal(o) is None]
    wanted: dict[tuple[str, str], set[str]] = {}
    for o in observations:
        if o.source_session_id and o.source_message_ids:
            shown = o.source_message_ids[:MAX_SHOWN]
            wanted.setdefault((o.agent_id, o.source_session_id), set()).update(shown)
    found: dict[tuple[str, str, str], CitedLine] = {}
    for (agent_id, session_id), ids in wanted.items():
        for m in store.sessions.messages_by_id(agent_id, session_id, sorted(ids)):
            speaker = (m.user_name or m.user_id or m.role) if m.role == "user" else m.role
            found[(agent_id, session_id, m.message_id)] = CitedLine(
                message_id=m.message_id,
                role=m.role,
                speaker=speaker,
                text=m.content,
                at=m.created_at,
            )
    cited: dict[str, Citation] = {}
    for o in observations:
        if not (o.source_session_id and o.source_message_ids):
            continue
        lines = [
            line
            for mid in o.source_message_ids[:MAX_SHOWN]
            if (line := found.get((o.agent_id, o.source_session_id, mid))) is not None
        ]
        cited[o.id] = Citation(lines=lines, more=len(o.source_message_ids) - len(lines))
    return cited
