"""Large writes take turns with large requests: a hook the Django side fills in.

Formation stores what a session said; for a session of a few maximum-size messages that
commit is as heavy for the store as the ingest that brought them. The web tier makes
large requests take a host-wide slot (`memory_admin.web.large_requests`); a background job's
large commit takes the same slot, so on a small host the heavy writes of requests and
jobs run one at a time and short reads keep the store's other core. The domain cannot
import Django, so the gate is injected; without one (scripts, tests of the domain) large
work runs at once.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

LargeWorkGate = Callable[[int], AbstractContextManager[object]]

_gate: LargeWorkGate | None = None


def register_large_work_gate(gate: LargeWorkGate | None) -> None:
    global _gate
    _gate = gate


def large_work(size: int) -> AbstractContextManager[object]:
    """Hold the host's large-work slot (when `size` bytes is large) for the block."""
    return nullcontext() if _gate is None else _gate(size)
