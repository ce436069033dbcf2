"""Domain actions: one write path per action, whichever interface calls it.

Each `do_*` action takes an `Actor`, calls the service, records the one audit
entry (same action, object type, object id and summary shape for the API, the
UI and the CLI) and schedules the jobs the write started. The API handlers and
UI views only parse, call the action and render.
"""

from streams.actions.base import Actor, register_dispatcher, schedule

__all__ = ["Actor", "register_dispatcher", "schedule"]
