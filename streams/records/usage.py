"""Cost and health: LLM tokens and estimated cost per agent, scope, prompt version and
model, counted as each job finishes, and read back over 1, 7 or 30 days.

Tokens were stored per job and per consolidation version but never summed, so nobody
could say which scopes or prompts cost most. `usage_record` adds each finished job to
day counters (see `streams.store.usage`); cost is estimated at write time from the
price table in effect (USD per million tokens in and out, per model), kept in
micro-dollars. Formation is one call per conversation for all the scopes it feeds, so
its tokens count for the agent and its prompt, not for a scope; a scope's numbers are
its consolidation and propagation runs, plus the observations formation added to it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from bson import ObjectId

from streams.core.documents import Job, Scope, utcnow
from streams.llm.port import LLMResult
from streams.store import MemoryStore
from streams.store.usage import TOP_KEPT

Prices = dict[str, tuple[float, float]]  # model → (USD per 1M input, per 1M output tokens)
WINDOWS = (1, 7, 30)
MAX_DAYS = 30
BACKLOG = "backlog"
TOP_RETRIES = 3
logger = logging.getLogger(__name__)


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_micro: int = 0
    unpriced_tokens: int = 0
    jobs: int = 0
    failed: int = 0
    observations: int = 0
    refused: int = 0  # consolidation answers the checks kept out
    empty: int = 0  # extractions that found nothing where the offline rules find facts
    contradictions_rejected: int = 0
    fidelity_weighed: int = 0
    fidelity_unstated: int = 0

    @property
    def cost_usd(self) -> float:
        return self.cost_micro / 1_000_000

    @property
    def fidelity_rate(self) -> float | None:
        """The share of absorbed observations the committed versions state (None: none
        weighed), so a prompt version that loses facts shows."""
        if not self.fidelity_weighed:
            return None
        return 1 - self.fidelity_unstated / self.fidelity_weighed

    def add(self, doc: dict[str, Any]) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + int(doc.get(name, 0)))


@dataclass
class AgentUsage:
    agent_id: str
    days: int
    total: Usage
    by_prompt: list[tuple[str, Usage]] = field(default_factory=list)
    by_model: list[tuple[str, Usage]] = field(default_factory=list)


@dataclass(frozen=True)
class RankedScope:
    scope_id: str
    agent_id: str
    value: int  # micro-dollars, or pending observations
    tokens: int = 0  # tokens in and out: ranks scopes of unpriced or free models too


def _day(when: datetime | date) -> str:
    return (when.date() if isinstance(when, datetime) else when).isoformat()


def _first(today: date, days: int) -> str:
    return (today - timedelta(days=max(1, min(days, MAX_DAYS)) - 1)).isoformat()


def price_of(prices: Prices, model: str, prompt_tokens: int, completion_tokens: int) -> int | None:
    """Micro-dollars for one call, or None when the model has no price."""
    price = prices.get(model)
    if price is None:
        return None
    return round(prompt_tokens * price[0] + completion_tokens * price[1])


# -- writing ------------------------------------------------------------------------------


def usage_record(
    *,
    store: MemoryStore,
    job: Job,
    results: list[LLMResult],
    result: dict[str, Any],
    failed: bool,
    now: datetime | None = None,
) -> None:
    """Count one finished (or failed) job; never raises into the job (counters are advisory)."""
    try:
        _record(store, job, results, result, failed, now or utcnow())
    except Exception:  # noqa: BLE001 - a counter must never fail the work it counts
        logger.exception("usage counters for job %s were not written", job.id)


def answer_outcomes(result: dict[str, Any]) -> dict[str, int]:
    """What a job's result says of its model answers, as counters: `refused` (a
    consolidation answer the checks kept out), `empty` (an extraction that found nothing
    where the offline rules find facts; a propagation that shared nothing of what it was
    offered), `dropped` (answer items the parser refused: an unknown label, an invented
    text), `contradictions_rejected`, and the fidelity
    counts (`fidelity_weighed` observations, `fidelity_unstated` of them) from which
    Usage shows a fidelity rate per prompt version."""
    counts: dict[str, int] = {}
    if result.get("outcome") in ("refused", "empty"):
        counts[result["outcome"]] = 1
    for name in ("contradictions_rejected", "dropped", "fidelity_weighed", "fidelity_unstated"):
        value = result.get(name)
        if isinstance(value, int) and value > 0:
            counts[name] = value
    return counts


def _record(
    store: MemoryStore,
    job: Job,
    results: list[LLMResult],
    result: dict[str, Any],
    failed: bool,
    now: datetime,
) -> None:
    day = _day(now)
    prices: Prices = getattr(store, "prices", {}) or {}
    total: dict[str, int] = {"jobs": 1, "failed": int(failed), "calls": len(results)}
    for answer in results:
        counts = {
            "calls": 1,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        cost = price_of(prices, answer.model, answer.prompt_tokens, answer.completion_tokens)
        if cost is None:
            counts["unpriced_tokens"] = answer.prompt_tokens + answer.completion_tokens
        else:
            counts["cost_micro"] = cost
        for name in ("prompt_tokens", "completion_tokens", "cost_micro", "unpriced_tokens"):
            total[name] = total.get(name, 0) + counts.get(name, 0)
        store.usage.increment(
            agent_id=job.agent_id, day=day, dim="model", key=answer.model or "?", counts=counts
        )
        _count_reading(store, job, day, answer)
    outcomes = answer_outcomes(result)
    for name, count in outcomes.items():
        total[name] = total.get(name, 0) + count
    if outcomes.keys() & {"refused", "empty"}:
        flagged = {k: v for k, v in outcomes.items() if k in ("refused", "empty")}
        for model in dict.fromkeys(a.model or "?" for a in results):
            store.usage.increment(
                agent_id=job.agent_id, day=day, dim="model", key=model, counts=flagged
            )
    _count_outcomes_per_task(store, job, day, results, outcomes)
    total = {k: v for k, v in total.items() if v}
    store.usage.increment(agent_id=job.agent_id, day=day, dim="agent", key="", counts=total)
    version = result.get("prompt_version")
    prompt = f"{job.kind} v{version}" if version is not None else job.kind
    store.usage.increment(agent_id=job.agent_id, day=day, dim="prompt", key=prompt, counts=total)
    if job.scope_id:
        store.usage.increment(
            agent_id=job.agent_id, day=day, dim="scope", key=job.scope_id, counts=total
        )
    grown = result.get("scopes") if job.kind == "formation" else None
    if isinstance(grown, dict):
        for scope_id, count in grown.items():
            store.usage.increment(
                agent_id=job.agent_id,
                day=day,
                dim="scope",
                key=scope_id,
                counts={"observations": int(count)},
            )
    _update_rankings(store, job, day, grown or {})


READINGS = {"repaired": "repairs", "unreadable": "parse_failures"}
FAILURES = {"cut": "cut", "timeout": "timeouts", "error": "errors"}


TASK_OF_KIND = {"formation": "extraction"}  # a job kind's model task, where they differ
PER_TASK = ("refused", "empty", "dropped", "contradictions_rejected")


def _count_outcomes_per_task(
    store: MemoryStore, job: Job, day: str, results: list[LLMResult], outcomes: dict[str, int]
) -> None:
    """What the checks made of the answers, per model and task too (key "<model> <task>"),
    beside the calls, repairs and parse failures `_count_reading` counts there."""
    counts = {k: v for k, v in outcomes.items() if k in PER_TASK}
    if not counts:
        return
    task = TASK_OF_KIND.get(job.kind, job.kind)
    for model in dict.fromkeys(a.model or "?" for a in results):
        store.usage.increment(
            agent_id=job.agent_id, day=day, dim="model_task", key=f"{model} {task}", counts=counts
        )


def _count_reading(store: MemoryStore, job: Job, day: str, answer: LLMResult) -> None:
    """Per model and task (key "<model> <task>"): calls, the JSON answers that needed
    fences or prose taken off (`repairs`) or could not be read (`parse_failures`), and
    the calls that brought no answer (`cut` at max_tokens, `timeouts`, other `errors`)."""
    task = answer.extra.get("task") or job.kind
    counts = {"calls": 1}
    reading = READINGS.get(str(answer.extra.get("json")))
    if reading:
        counts[reading] = 1
    failure = FAILURES.get(str(answer.extra.get("failure")))
    if failure:
        counts[failure] = 1
    key = f"{answer.model or '?'} {task}"
    store.usage.increment(agent_id=job.agent_id, day=day, dim="model_task", key=key, counts=counts)


def _update_rankings(store: MemoryStore, job: Job, day: str, grown: dict[str, Any]) -> None:
    """Today's costliest scopes, and the largest backlogs as the jobs last saw them."""
    if job.scope_id:
        doc = store.usage.get(job.agent_id, day, "scope", job.scope_id) or {}
        tokens = int(doc.get("prompt_tokens", 0)) + int(doc.get("completion_tokens", 0))
        if doc.get("cost_micro") or tokens:
            cost = int(doc.get("cost_micro", 0))
            _rank(store, day, {job.scope_id: (job.agent_id, cost, tokens)})
    touched = [*grown, *([job.scope_id] if job.scope_id else [])]
    if touched:
        ids = [ObjectId(s) for s in dict.fromkeys(touched) if ObjectId.is_valid(s)]
        scopes = store.scopes.get_many(ids)
        _rank(store, BACKLOG, {s.id: (s.agent_id, s.pending_count, 0) for s in scopes})


def _rank(store: MemoryStore, key: str, values: dict[str, tuple[str, int, int]]) -> None:
    """Merge `scope_id → (agent_id, value, tokens)` into the kept ranking `key`."""
    for _ in range(TOP_RETRIES):
        doc = store.usage.top_get(key) or {"version": 0, "items": []}
        items = {i["scope_id"]: i for i in doc["items"]}
        for scope_id, (agent_id, value, tokens) in values.items():
            items[scope_id] = {
                "scope_id": scope_id,
                "agent_id": agent_id,
                "value": value,
                "tokens": tokens,
            }
        kept = sorted(
            (i for i in items.values() if i["value"] > 0 or i.get("tokens", 0) > 0),
            key=lambda i: (i["value"], i.get("tokens", 0)),
            reverse=True,
        )[:TOP_KEPT]
        if store.usage.top_replace(key, version=doc["version"], fields={"items": kept}):
            return


# -- reading ------------------------------------------------------------------------------


def agent_usage(*, store: MemoryStore, agent_id: str, days: int, today: date) -> AgentUsage:
    """An agent's totals, by prompt version and by model, over the last `days` days."""
    days = max(1, min(days, MAX_DAYS))
    first, last = _first(today, days), today.isoformat()
    total = Usage()
    for doc in store.usage.for_agent(
        agent_id=agent_id, dim="agent", first=first, last=last, limit=days
    ):
        total.add(doc)
    found = AgentUsage(agent_id=agent_id, days=days, total=total)
    for dim, target in (("prompt", found.by_prompt), ("model", found.by_model)):
        sums: dict[str, Usage] = {}
        docs = store.usage.for_agent(
            agent_id=agent_id, dim=dim, first=first, last=last, limit=days * 50
        )
        for doc in docs:
            sums.setdefault(doc["key"], Usage()).add(doc)
        target.extend(sorted(sums.items(), key=lambda kv: (-kv[1].cost_micro, kv[0])))
    return found


def usage_by_agent(
    *, store: MemoryStore, agent_ids: list[str], days: int, today: date
) -> list[tuple[str, Usage]]:
    """Each agent's totals over the last `days` days, costliest first (one read of at most
    `days` documents per agent): the "All agents" rows, summed by the page."""
    days = max(1, min(days, MAX_DAYS))
    first, last = _first(today, days), today.isoformat()
    rows: list[tuple[str, Usage]] = []
    for agent_id in agent_ids:
        total = Usage()
        for doc in store.usage.for_agent(
            agent_id=agent_id, dim="agent", first=first, last=last, limit=days
        ):
            total.add(doc)
        rows.append((agent_id, total))
    return sorted(rows, key=lambda row: (-row[1].cost_micro, row[0]))


def scope_usage(*, store: MemoryStore, scope_id: str, today: date) -> dict[int, Usage]:
    """A scope's usage over 1, 7 and 30 days (one read of at most 30 documents)."""
    docs = store.usage.for_scope(
        scope_id=scope_id, first=_first(today, MAX_DAYS), last=today.isoformat(), days=MAX_DAYS
    )
    windows = {days: Usage() for days in WINDOWS}
    for doc in docs:
        for days, usage in windows.items():
            if doc["day"] >= _first(today, days):
                usage.add(doc)
    return windows


@dataclass(frozen=True)
class ScopeHealth:
    consolidation_age: timedelta | None
    backlog_age: timedelta | None  # since the oldest pending observation was added
    growth_per_day: float  # observations added per day over the last 7 days
    failed_runs: int  # over the last 30 days


def scope_health(
    *, store: MemoryStore, scope: Scope, usage: dict[int, Usage], now: datetime | None = None
) -> ScopeHealth:
    now = now or utcnow()
    backlog_age = None
    if scope.pending_observation_ids and ObjectId.is_valid(scope.pending_observation_ids[0]):
        oldest = store.observations.get(ObjectId(scope.pending_observation_ids[0]))
        backlog_age = now - oldest.created_at if oldest else None
    updated = scope.consolidation_updated_at
    return ScopeHealth(
        consolidation_age=(now - updated) if updated and scope.consolidation_version else None,
        backlog_age=backlog_age,
        growth_per_day=round(usage[7].observations / 7, 1),
        failed_runs=usage[30].failed,
    )


def top_scopes_by_cost(
    *, store: MemoryStore, days: int, today: date, limit: int = 10
) -> list[RankedScope]:
    """The costliest scopes over `days`, summed from each day's kept top (≤ 30 reads)."""
    days = max(1, min(days, MAX_DAYS))
    names = [(today - timedelta(days=n)).isoformat() for n in range(days)]
    sums: dict[str, RankedScope] = {}
    for doc in store.usage.top_days(names):
        for item in doc.get("items", []):
            seen = sums.get(item["scope_id"])
            sums[item["scope_id"]] = RankedScope(
                item["scope_id"],
                item["agent_id"],
                item["value"] + (seen.value if seen else 0),
                item.get("tokens", 0) + (seen.tokens if seen else 0),
            )
    ranked = sorted(sums.values(), key=lambda r: (r.value, r.tokens), reverse=True)
    return ranked[:limit]


def top_scopes_by_backlog(*, store: MemoryStore, limit: int = 10) -> list[tuple[Scope, int]]:
    """The largest pending backlogs the jobs have seen, re-read now (one `_id` list)."""
    doc = store.usage.top_get(BACKLOG) or {"items": []}
    ids = [ObjectId(i["scope_id"]) for i in doc["items"][: limit * 2]]
    fresh = [s for s in store.scopes.get_many(ids) if s.pending_count > 0]
    fresh.sort(key=lambda s: s.pending_count, reverse=True)
    return [(s, s.pending_count) for s in fresh[:limit]]
