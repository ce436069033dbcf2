"""LLM provider: an API key selects the `openai` provider, none the offline one."""

from __future__ import annotations

from memory_admin.settings.env import env_float, env_int, env_optional, env_str

OPENAI_API_KEY: str | None = env_optional("OPENAI_API_KEY")
OPENAI_BASE_URL: str | None = env_optional("OPENAI_BASE_URL")
MEMORY_LLM_PROVIDER = "openai" if OPENAI_API_KEY else "offline"
MEMORY_LLM_MODEL_FAST = env_str("MEMORY_LLM_MODEL_FAST", "gpt-4o-mini")
MEMORY_LLM_MODEL_SLOW = env_str("MEMORY_LLM_MODEL_SLOW", "gpt-4o")
MEMORY_LLM_TIMEOUT_SECONDS = env_float("MEMORY_LLM_TIMEOUT_SECONDS", 60.0)
MEMORY_LLM_MAX_RETRIES = env_int("MEMORY_LLM_MAX_RETRIES", 2)
MEMORY_EMBEDDING_MODEL: str | None = env_optional("MEMORY_EMBEDDING_MODEL")
