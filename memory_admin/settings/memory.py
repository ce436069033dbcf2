"""Memory behaviour: formation triggers and consolidation defaults (`domain.md`)."""

from __future__ import annotations

from memory_admin.settings.env import env_int

MEMORY_FORMATION_MAX_MESSAGES = env_int("MEMORY_FORMATION_MAX_MESSAGES", 45)
MEMORY_FORMATION_MAX_TOKENS = env_int("MEMORY_FORMATION_MAX_TOKENS", 1000)
MEMORY_FORMATION_MIN_MESSAGES = env_int("MEMORY_FORMATION_MIN_MESSAGES", 4)
MEMORY_COLD_SESSION_MINUTES = env_int("MEMORY_COLD_SESSION_MINUTES", 10)
MEMORY_CONSOLIDATION_THRESHOLD = env_int("MEMORY_CONSOLIDATION_THRESHOLD", 10)
MEMORY_CONSOLIDATION_MAX_WORDS = env_int("MEMORY_CONSOLIDATION_MAX_WORDS", 500)
# A consolidation run holds its scope's lease this long; a job "running" longer is
# taken over (its worker died). Both only bound recovery time: safety comes from the
# version check in the commit.
MEMORY_CONSOLIDATION_LEASE_SECONDS = env_int("MEMORY_CONSOLIDATION_LEASE_SECONDS", 300)
MEMORY_JOB_STALE_SECONDS = env_int("MEMORY_JOB_STALE_SECONDS", 900)
