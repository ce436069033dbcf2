"""People: one user of one agent.

- `user_find`: find a user by the start of a name or id.
- `user_audit`: what is remembered about a user (the Users page), and the walk the export uses.
- `export`: export a user or a scope (JSON, Markdown): one document for the API and the UI;
  `exchange`: import it back; `exchange_checks`, `exchange_review`, `exchange_settings`:
  an import's parts (versions and identities, review fields, scope settings), checked.
- `privacy`: forget a user, and prove it.
"""
