"""LLM provider: an API key selects the `openai` provider, none the offline one."""

from __future__ import annotations

import json

from memory_admin.settings.env import env_float, env_int, env_optional, env_str

OPENAI_API_KEY: str | None = env_optional("OPENAI_API_KEY")
OPENAI_BASE_URL: str | None = env_optional("OPENAI_BASE_URL")
MEMORY_LLM_PROVIDER = "openai" if OPENAI_API_KEY else "offline"
MEMORY_LLM_MODEL_FAST = env_str("MEMORY_LLM_MODEL_FAST", "gpt-4o-mini")
MEMORY_LLM_MODEL_SLOW = env_str("MEMORY_LLM_MODEL_SLOW", "gpt-4o")
MEMORY_LLM_TIMEOUT_SECONDS = env_float("MEMORY_LLM_TIMEOUT_SECONDS", 60.0)
MEMORY_LLM_MAX_RETRIES = env_int("MEMORY_LLM_MAX_RETRIES", 2)
# Per task, for a slow local server (a CPU model consolidates for minutes), e.g.
# MEMORY_LLM_TIMEOUT_CONSOLIDATION_SECONDS=600; a task not set uses MEMORY_LLM_TIMEOUT_SECONDS.
MEMORY_LLM_TASK_TIMEOUTS: dict[str, float] = {
    task: env_float(f"MEMORY_LLM_TIMEOUT_{task.upper()}_SECONDS", 0.0)
    for task in ("extraction", "consolidation", "propagation")
    if env_optional(f"MEMORY_LLM_TIMEOUT_{task.upper()}_SECONDS")
}
MEMORY_EMBEDDING_MODEL: str | None = env_optional("MEMORY_EMBEDDING_MODEL")
# auto | api | local | off (memory_admin/integrations/embeddings.py): auto takes the API model when
# set, else the local model when the `local-embeddings` extra is installed, else none.
MEMORY_EMBEDDINGS = env_str("MEMORY_EMBEDDINGS", "auto")
if MEMORY_EMBEDDINGS not in ("auto", "api", "local", "off"):
    raise ValueError("MEMORY_EMBEDDINGS must be auto, api, local or off")
# Torch threads for the local model: one keeps a query's embedding steady on a busy
# 2-core machine (p95 58 ms against 706 ms with two threads, measured under load).
MEMORY_EMBEDDING_THREADS = env_int("MEMORY_EMBEDDING_THREADS", 1)

# Estimated cost on the usage pages: USD per million tokens (input, output) per model.
# Override with JSON, e.g. MEMORY_LLM_PRICES='{"gpt-4o-mini": [0.15, 0.6]}'; a model
# missing from the table is counted as "unpriced" tokens, never guessed.
DEFAULT_LLM_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "offline-rules": (0.0, 0.0),  # the offline demo provider costs nothing
}
MEMORY_LLM_PRICES: dict[str, tuple[float, float]] = {
    model: (float(price[0]), float(price[1]))
    for model, price in (
        json.loads(env_optional("MEMORY_LLM_PRICES") or "null") or DEFAULT_LLM_PRICES
    ).items()
}
