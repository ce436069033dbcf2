"""What happened, counted and pushed out. Imports only the store, the LLM port and core.

- `audit`: the audit log (`audit_record` writes, for actions only; `audit_page` reads).
- `usage`: LLM tokens and cost per agent, scope and prompt version.
- `activity`: daily counters per agent; `recount`: counters repaired from what is stored.
- `webhooks`: an agent's hooks and the outbox of changes pushed to them.
- `context_scrub`: removed text leaves every logged context and chat call that quoted it.
"""
