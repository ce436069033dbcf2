"""Domain actions: one write path per action, whichever interface calls it.

Each `do_*` action takes an `Actor`, calls the service, records the one audit
entry (same action, object type, object id and summary shape for the API, the
UI and the CLI) and schedules the jobs the write started. The API handlers and
UI views only parse, call the action and render.

One transaction per action (`streams.actions.tx.run_action`): the service writes
with the action's session, the action adds its audit entry (services never write
one) and its jobs as queued documents, all committed together; the jobs are handed
to the runner only after the commit, and the recovery sweep sends any a dead
process left queued. tests/test_action_transactions.py lists the actions that do
not run this way yet, and why.
"""

from streams.actions.base import Actor, register_dispatcher, schedule

__all__ = ["Actor", "register_dispatcher", "schedule"]
