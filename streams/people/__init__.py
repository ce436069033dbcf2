"""People: one user of one agent.

- `user_find`: find a user by the start of a name or id.
- `user_audit`: what is remembered about a user, and the JSON export.
- `exchange`: export a user or a scope (JSON, Markdown) and import it back;
  `exchange_review`: the review fields of an import, checked.
- `privacy`: forget a user, and prove it.
"""
