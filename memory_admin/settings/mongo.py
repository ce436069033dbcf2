"""MongoDB: a URI in production; unset means the embedded SecantusDB server."""

from __future__ import annotations

from memory_admin.settings.env import env_float, env_int, env_optional, env_str
from streams.store.flavour import Flavour, parse_flavour

MONGODB_URI: str | None = env_optional("MONGODB_URI")
MONGODB_DB: str = env_str("MONGODB_DB", "memory")
# Embedded store only: how long to wait for a freshly started server to answer.
MEMORY_EMBEDDED_START_TIMEOUT = 60.0
# How long a store call waits for a reachable server: short, so that while the store is
# down requests answer 503 (with Retry-After) within about a second instead of hanging.
MONGODB_SERVER_SELECTION_TIMEOUT_MS: int = env_int("MONGODB_SERVER_SELECTION_TIMEOUT_MS", 1000)
# The Retry-After (seconds) of those 503s.
MEMORY_STORE_RETRY_AFTER_SECONDS = 2
# A write that keeps conflicting with another transaction this long answers 503 (code
# `busy`) with Retry-After, instead of waiting: typically a transaction left open by a
# worker killed mid-write, until the store reaps it (the embedded store after
# MEMORY_STORE_TRANSACTION_LIFETIME_SECONDS, 10 by default; mongod after its
# transactionLifetimeLimitSeconds, 60 by default).
MEMORY_STORE_CONFLICT_SECONDS: float = env_float("MEMORY_STORE_CONFLICT_SECONDS", 5.0)
# At most this many store transactions of one process open at once (0: no limit); the
# others wait in the process, holding no snapshot (`streams.store.transaction_gate`).
# Unset: the flavour's (1 on the embedded store, no limit on MongoDB; docs/store.md).
_TRANSACTIONS = env_optional("MEMORY_STORE_TRANSACTIONS_PER_PROCESS")
MEMORY_STORE_TRANSACTIONS_PER_PROCESS: int | None = int(_TRANSACTIONS) if _TRANSACTIONS else None
# The one switch of the embedded store's workarounds (docs/store.md): `embedded` or
# `mongodb`; unset, the server's buildInfo decides (SecantusDB names itself there).
MEMORY_STORE_FLAVOUR: Flavour | None = parse_flavour(env_optional("MEMORY_STORE_FLAVOUR"))
