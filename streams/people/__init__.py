"""People: one user of one agent: find, audit, export and import, forget."""
