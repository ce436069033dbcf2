"""The LLM provider the app uses, built from Django settings and cached per process.

`streams/` takes plain values, so this is the one place that reads the LLM settings.
The cache is keyed on every value the provider is built from: tests (and a reloaded
configuration) that change a setting get a matching provider, while a process reuses
one provider, and so one HTTP client with its connection pool, for all its calls.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings

from memory_admin.stores import get_store
from streams.core.documents import Scope
from streams.llm.negotiation import ServerTerms, key_of, terms_for
from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.llm.port import LLMProvider
from streams.memory.consolidation_estimate import ConsolidationEstimate, consolidation_estimate
from streams.memory.scope_limits import scope_limits
from streams.store.llm_servers import LLMServerRepository

if TYPE_CHECKING:
    from streams.llm.openai_provider import OpenAIProvider

TASKS = ("extraction", "consolidation", "propagation")


def get_llm_provider() -> LLMProvider:
    """`OpenAIProvider` when `MEMORY_LLM_PROVIDER` is "openai", the offline one otherwise."""
    if settings.MEMORY_LLM_PROVIDER != "openai":
        return _offline_provider()
    return _openai_provider(
        api_key=settings.OPENAI_API_KEY,
        base_url=settings.OPENAI_BASE_URL,
        model_fast=settings.MEMORY_LLM_MODEL_FAST,
        model_slow=settings.MEMORY_LLM_MODEL_SLOW,
        timeout_seconds=float(settings.MEMORY_LLM_TIMEOUT_SECONDS),
        max_retries=int(settings.MEMORY_LLM_MAX_RETRIES),
        task_timeouts=_task_timeouts(),
    )


def consolidation_model() -> str:
    """The model a consolidation call names (the slow tier; the offline rules' name)."""
    if settings.MEMORY_LLM_PROVIDER != "openai":
        return OFFLINE_MODEL
    return str(settings.MEMORY_LLM_MODEL_SLOW)


def scope_consolidation_estimate(scope: Scope) -> ConsolidationEstimate:
    """The scope's "Consolidate now" estimate at the configured chunk budget and price
    table (`MEMORY_CONSOLIDATION_CHUNK_TOKENS`, `MEMORY_LLM_PRICES`), priced for the model
    the run will name: the scope's or its agent's `consolidation_model`, else the code's."""
    store = get_store()
    model = consolidation_model()
    if settings.MEMORY_LLM_PROVIDER == "openai":
        named = scope_limits(store=store, scope=scope).consolidation_model.named_model
        model = named or model
    return consolidation_estimate(
        store=store,
        scope=scope,
        chunk_tokens=int(settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS),
        model=model,
        prices=store.prices,
    )


def consolidation_estimate_shown(scope: Scope) -> ConsolidationEstimate | None:
    """The estimate the scope page shows beside "Consolidate now"; None: nothing pending."""
    return scope_consolidation_estimate(scope) if scope.pending_observation_ids else None


def llm_server_terms() -> dict[str, object] | None:
    """What the configured model server accepted, as every process learnt it (the store's
    copy first: a job's child process may have stepped down), for `/api/v1/health`."""
    if settings.MEMORY_LLM_PROVIDER != "openai":
        return None
    terms = terms_for(settings.OPENAI_BASE_URL, _terms_memory)
    saved = _load_saved(settings.OPENAI_BASE_URL)
    return (ServerTerms.of(saved) if saved else terms).as_dict()


def _load_saved(base_url: str | None) -> dict[str, object] | None:
    try:
        return _terms_memory().load(key_of(base_url))
    except Exception:  # noqa: BLE001 - health answers from this process then
        return None


def _terms_memory() -> LLMServerRepository:
    """The store's record of what each model server accepts (one per process's store)."""
    return get_store().llm_servers


def _task_timeouts() -> tuple[tuple[str, float], ...]:
    """The per-task timeouts (a hashable key for the cache); a task not set follows
    `MEMORY_LLM_TIMEOUT_SECONDS`."""
    base = float(settings.MEMORY_LLM_TIMEOUT_SECONDS)
    configured = getattr(settings, "MEMORY_LLM_TASK_TIMEOUTS", None) or {}
    return tuple(sorted((task, float(configured.get(task, base))) for task in TASKS))


@lru_cache(maxsize=1)
def _offline_provider() -> OfflineProvider:
    return OfflineProvider()


@lru_cache(maxsize=8)
def _openai_provider(
    *,
    api_key: str | None,
    base_url: str | None,
    model_fast: str,
    model_slow: str,
    timeout_seconds: float,
    max_retries: int,
    task_timeouts: tuple[tuple[str, float], ...] = (),
) -> OpenAIProvider:
    # Imported on first use: the `openai` SDK is half a second of every process's start
    # (tests/test_first_hour.py), and most management commands never call a model.
    from streams.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(
        api_key=api_key,
        base_url=base_url,
        model_fast=model_fast,
        model_slow=model_slow,
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        task_timeouts=dict(task_timeouts),
        terms_memory=_terms_memory,
    )


def clear_llm_provider_cache() -> None:
    """Forget the cached providers (and their clients), e.g. after a fork in a test."""
    _offline_provider.cache_clear()
    _openai_provider.cache_clear()
