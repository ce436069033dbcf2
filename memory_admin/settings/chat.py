"""The chat proxy (`POST /api/v1/agents/{id}/chat/completions`): where it forwards to.

Unset, the upstream falls back to the LLM settings (`OPENAI_BASE_URL`, `OPENAI_API_KEY`);
the fallback is resolved per request in `memory_admin.integrations.chat_upstream`.
"""

from __future__ import annotations

from memory_admin.settings.env import env_float, env_int, env_optional, env_str

# The base URL includes the API's version path, as the openai SDK's `base_url` does
# (`https://api.openai.com/v1`, Ollama's `http://localhost:11434/v1`): a chat call goes to
# `<base>/chat/completions`. A URL with no path is flagged by `manage.py check` (W001).
MEMORY_CHAT_UPSTREAM_BASE_URL: str | None = env_optional("MEMORY_CHAT_UPSTREAM_BASE_URL")
MEMORY_CHAT_UPSTREAM_API_KEY: str | None = env_optional("MEMORY_CHAT_UPSTREAM_API_KEY")
# "alias=upstream-model,other=upstream-2": a model the caller names is sent as its mapped
# name; a model not in the map is passed through unchanged.
MEMORY_CHAT_MODEL_MAP: str = env_str("MEMORY_CHAT_MODEL_MAP", "")
MEMORY_CHAT_UPSTREAM_TIMEOUT_SECONDS = env_float("MEMORY_CHAT_UPSTREAM_TIMEOUT_SECONDS", 120.0)
# Chat calls waiting on the upstream at once, per web process and per API key in a
# process (memory_admin.integrations.chat_limits): past them 503 / 429 with Retry-After, so a slow
# upstream can never hold every web thread. Default: half the process's threads
# (GUNICORN_THREADS, 4 by default → 2), leaving the rest to context and ingest; 0 = no cap.
_CHAT_DEFAULT = max(1, env_int("GUNICORN_THREADS", 4) // 2)
MEMORY_CHAT_MAX_CONCURRENT = env_int("MEMORY_CHAT_MAX_CONCURRENT", _CHAT_DEFAULT)
MEMORY_CHAT_MAX_CONCURRENT_PER_KEY = env_int("MEMORY_CHAT_MAX_CONCURRENT_PER_KEY", _CHAT_DEFAULT)
# The memory tool (an agent's `memory_tool: search_memory`): how many rounds of
# `search_memory` calls the proxy answers for one chat call before it stops and says so.
MEMORY_CHAT_TOOL_MAX_ROUNDS = env_int("MEMORY_CHAT_TOOL_MAX_ROUNDS", 3)
