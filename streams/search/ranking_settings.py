"""The lifecycle ranking switches as settings: recency, MMR and the feedback prior.

Each was a code switch of `streams.search.ranking.Ranking` (off in `FINAL`: measured on the
dev conversations, each lowered recall on one of them). An agent may turn one on or off
for all its scopes, a scope for itself: resolved code < agent < scope, like the prompts and
`MEMORY_CONSOLIDATE_AFTER_DAYS`. A setting is `True`, `False`, or absent (inherit).

How a search over several scopes (a context: the user's own, their groups', the
collective's) applies them: recency and feedback act on each hit alone, so each hit gets
its own scope's; MMR reorders the whole list, so it follows the agent (or, when a single
scope is searched, that scope).

`MEASURED_EFFECT` is what `python -m benchmarks retrieval_lifecycle` prints as its last
table (`benchmarks.retrieval_lifecycle.switch_effects`); the settings forms show it beside
each switch, and a test keeps the names in step with the benchmark's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from streams.core.documents import Scope
from streams.core.exceptions import InvalidInput
from streams.search.ranking import FINAL, Ranking, ScopeLifecycle
from streams.store import MemoryStore

RANKING_SWITCHES = ("recency", "mmr", "feedback")
SWITCH_LABELS = {
    "recency": "Recency (newer facts gain up to 10 %)",
    "mmr": "MMR diversity (near-repeats move down the top 10)",
    "feedback": "Feedback prior (useful / useless votes move a hit up to 20 %)",
}
Source = Literal["code", "agent", "scope"]


@dataclass(frozen=True)
class SwitchEffect:
    """A switch turned on alone, against the final ranking without lifecycle stages."""

    recall_at_5: float
    mrr: float

    @property
    def figure(self) -> str:
        return f"recall@5 {self.recall_at_5:+.3f}, MRR {self.mrr:+.3f}"


MEASURED_ON = (
    "LoCoMo dev conversations conv-26, conv-30, conv-44 (odd questions; the even ones "
    "played the usage), mean of the three; benchmarks/retrieval_lifecycle.py"
)
MEASURED_EFFECT: dict[str, SwitchEffect] = {
    "recency": SwitchEffect(recall_at_5=-0.013, mrr=-0.004),
    "mmr": SwitchEffect(recall_at_5=-0.008, mrr=0.000),
    "feedback": SwitchEffect(recall_at_5=-0.011, mrr=0.011),
}


@dataclass(frozen=True)
class ResolvedSwitch:
    """One switch as it applies, where its value comes from, and its measured effect."""

    name: str
    value: bool
    source: Source
    own: bool | None  # what this level itself holds (None: inherits)
    effect: SwitchEffect


def ranking_settings_check(values: Mapping[str, Any]) -> dict[str, bool]:
    """The settings to store: only known switches, each true, false or null (null: not
    stored, the level inherits). InvalidInput names the field."""
    stored: dict[str, bool] = {}
    for name, value in values.items():
        if name not in RANKING_SWITCHES:
            raise InvalidInput(
                f"unknown ranking setting {name!r}: one of {', '.join(RANKING_SWITCHES)}",
                details=[{"field": name}],
            )
        if value is None:
            continue
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true, false or null", details=[{"field": name}])
        stored[name] = value
    return stored


def resolve_switches(
    *, agent_ranking: Mapping[str, bool], scope_ranking: Mapping[str, bool] | None = None
) -> dict[str, ResolvedSwitch]:
    """Every switch: the scope's own value, else the agent's, else the code's (`FINAL`)."""
    resolved: dict[str, ResolvedSwitch] = {}
    level = agent_ranking if scope_ranking is None else scope_ranking
    for name in RANKING_SWITCHES:
        value: bool = getattr(FINAL, name)
        source: Source = "code"
        if name in agent_ranking:
            value, source = agent_ranking[name], "agent"
        if scope_ranking is not None and name in scope_ranking:
            value, source = scope_ranking[name], "scope"
        resolved[name] = ResolvedSwitch(
            name=name,
            value=value,
            source=source,
            own=level.get(name),
            effect=MEASURED_EFFECT[name],
        )
    return resolved


def scope_switches(*, store: MemoryStore, scope: Scope) -> dict[str, ResolvedSwitch]:
    """The scope's switches as they apply (its own over its agent's over the code's)."""
    agent = store.agents.settings(scope.agent_id)
    agent_ranking = agent.ranking if agent is not None else {}
    return resolve_switches(agent_ranking=agent_ranking, scope_ranking=scope.ranking)


def ranking_for_scopes(
    *, store: MemoryStore, agent_id: str, scopes: list[Scope], base: Ranking = FINAL
) -> Ranking:
    """The ranking a search of `scopes` of the agent uses: the agent's switches over
    `base`, each scope's own where it differs (recency, feedback), MMR by the one scope
    searched or else the agent."""
    agent = store.agents.settings(agent_id)
    agent_ranking = agent.ranking if agent is not None else {}
    wide = resolve_switches(agent_ranking=agent_ranking)
    ranking = _switched(base, wide)
    own: list[ScopeLifecycle] = []
    for scope in scopes:
        if not scope.ranking:
            continue
        mine = resolve_switches(agent_ranking=agent_ranking, scope_ranking=scope.ranking)
        if len(scopes) == 1:
            return _switched(base, mine)
        if mine["recency"].value != ranking.recency or mine["feedback"].value != ranking.feedback:
            own.append(
                ScopeLifecycle(
                    scope_id=scope.id,
                    feedback=mine["feedback"].value,
                    recency=mine["recency"].value,
                )
            )
    return replace(ranking, scope_lifecycle=tuple(own))


def _switched(base: Ranking, switches: dict[str, ResolvedSwitch]) -> Ranking:
    return replace(
        base,
        recency=switches["recency"].value,
        mmr=switches["mmr"].value,
        feedback=switches["feedback"].value,
    )
