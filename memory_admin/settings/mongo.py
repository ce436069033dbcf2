"""MongoDB: a URI in production; unset means the embedded SecantusDB server."""

from __future__ import annotations

from memory_admin.settings.env import env_optional, env_str

MONGODB_URI: str | None = env_optional("MONGODB_URI")
MONGODB_DB: str = env_str("MONGODB_DB", "memory")
# Embedded store only: how long to wait for a freshly started server to answer.
MEMORY_EMBEDDED_START_TIMEOUT = 60.0
