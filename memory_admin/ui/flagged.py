"""A text a shared scope refused as flagged (`Flagged`), shown with its flags marked so an
operator can look before confirming it ("Save anyway": an audited override; secrets are
redacted either way)."""

from __future__ import annotations

from typing import Any

from memory_admin.ui.review import highlighted
from streams.core.documents import Observation
from streams.guard.screening import Flagged, screen_text


def flagged_context(text: str, exc: Flagged) -> dict[str, Any]:
    """What `ui/_flagged.html` shows: the text as it would be stored, its flagged spans
    marked, and the flags that need a person's confirmation."""
    stored, detection = screen_text(text)
    shown = Observation(
        scope_id="",
        agent_id="",
        content=stored,
        flag_spans=[s.to_dict() for s in detection.spans],
    )
    details = exc.details if isinstance(exc.details, dict) else {}
    return {"flags": list(details.get("flags") or []), "segments": highlighted(shown)}
