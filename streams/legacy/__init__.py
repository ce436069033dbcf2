"""Legacy: migration from the earlier collections (`memory_user`, `memory_agent`, ...).

- `migration`: the migration itself; `documents`: the earlier documents and the report.
"""
