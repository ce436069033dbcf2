"""The dev conversations, loaded once each, and leave-one-out fitting of the ranking.

Every ranking is asked every question of a conversation through `search_in_scopes`;
the store's reads (the index, the candidates, their neighbours, the scopes) are
memoised per conversation (`Memo`), so a second ranking costs only the ranking's own
Python: a grid of a few hundred rankings runs in minutes. Results are memoised by
(conversation, ranking).

Leave-one-out: the ranking's constants and switches are fitted on two conversations
(coordinate ascent over `SPACE` from the defaults, two passes; a change must lower
neither conversation and raise their mean recall@5 by `MARGIN`), then measured on the
third. A switch is kept only if
flipping it in the fitted ranking lowers recall@5 on the held-out conversations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from benchmarks.locomo import AGENT, KS, USER
from streams.search.index import search_in_scopes, search_scopes
from streams.search.ranking import FINAL, Ranking
from streams.store import MemoryStore


class Memo:
    """A repository whose named read methods answer from memory after the first call."""

    def __init__(self, target: Any, names: set[str]) -> None:
        self._target, self._names = target, names
        self._seen: dict[Any, Any] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._target, name)
        if name not in self._names:
            return method

        def cached(*args: Any, **kwargs: Any) -> Any:
            key = (name, repr(args), repr(sorted(kwargs.items())))
            if key not in self._seen:
                self._seen[key] = method(*args, **kwargs)
            return self._seen[key]

        return cached


class MemoStore:
    """The store, its search reads memoised: for benchmarks that never write."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.search_index = Memo(store.search_index, {"read"})
        self.observations = Memo(store.observations, {"get_many_observed", "neighbours"})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@dataclass
class Dev:
    """One dev conversation: its turns, questions, store and the rankings' results."""

    name: str
    turns: list
    questions: list[dict]
    store: MemoryStore
    memo: Any
    scopes: list
    now: Any  # the time the questions are asked: a day after the last session
    results: dict[Ranking, list[list[str]]] = field(default_factory=dict)

    def ranked(self, ranking: Ranking) -> list[list[str]]:
        if ranking not in self.results:
            self.results[ranking] = [
                [
                    h.observation.source_message_ids[0]
                    for h in search_in_scopes(
                        store=self.memo,
                        scopes=self.scopes,
                        query=q["question"],
                        limit=max(KS),
                        ranking=ranking,
                        now=self.now,
                    )
                ]
                for q in self.questions
            ]
        return self.results[ranking]

    def recall(self, ranking: Ranking, k: int = 5) -> float:
        pairs = zip(self.questions, self.ranked(ranking), strict=True)
        return fmean(recall_at(q, r, k) for q, r in pairs)


def recall_at(question: dict, ranked: list[str], k: int) -> float:
    evidence = set(question["evidence"])
    return len(evidence & set(ranked[:k])) / len(evidence) if evidence else 0.0


def hit_at(question: dict, ranked: list[str], k: int) -> float:
    return 1.0 if set(question["evidence"]) & set(ranked[:k]) else 0.0


def dev_load(client: Any, path: Path, *, load: Any, turns_of: Any, categories: Any) -> Dev:
    conversation = json.loads(path.read_text())
    turns = turns_of(conversation)
    questions = [q for q in conversation["qa"] if q.get("category") in categories]
    store = MemoryStore(client, f"bench_quality_{path.stem.replace('-', '_')}")
    load(store, turns)
    scopes = search_scopes(store=store, agent_id=AGENT, user_id=USER)
    return Dev(
        name=path.stem,
        turns=turns,
        questions=questions,
        store=store,
        memo=MemoStore(store),
        scopes=scopes,
        now=turns[-1][2] + timedelta(days=1),
    )


# -- leave-one-out -----------------------------------------------------------------------


# Every tuned constant and switch of the ranking, with the values the grid tries (the
# default first). A switch with constants of its own is tried on with each of them, so
# a stage is never judged at one arbitrary setting.
def _on(switch: str, **grid: list[Any]) -> list[dict[str, Any]]:
    options: list[dict[str, Any]] = [{switch: True}]
    for name, values in grid.items():
        options = [{**o, name: v} for o in options for v in values]
    return [{switch: False}, *options]


SPACE: dict[str, list[dict[str, Any]]] = {
    "k1": [{"k1": v} for v in (0.9, 0.6, 1.2)],
    "b": [{"b": v} for v in (0.0, 0.2, 0.4, 0.75)],
    "question_words": [{"question_words": v} for v in (True, False)],
    "people": _on("people", people_boost=[0.3, 0.15, 0.5]),
    "names": [{"names": v} for v in (True, False)],
    "proximity": [{"proximity": v} for v in (True, False)],
    "neighbours": [{"neighbours": v} for v in (True, False)],
    "seeds": [{"seeds": v} for v in (15, 10, 20)],
    "reach": [{"reach": v} for v in (2, 1, 3)],
    "share": [{"share": v} for v in (0.7, 0.5, 0.6, 0.8)],
    "support": [{"support": v} for v in (True, False)],
    "neighbour_terms": [{"neighbour_terms": v} for v in (True, False)],
    "dates": _on("dates", date_boost=[0.5, 0.25, 1.0]),
    "when": _on("when", when_share=[0.5, 0.25, 1.0]),
    "multihop": [{"multihop": v} for v in (False, True)],
    "prf": _on("prf", prf_weight=[0.3, 0.15, 0.5], prf_terms=[8, 4]),
}
FIELDS = list(dict.fromkeys(k for options in SPACE.values() for o in options for k in o))
SWITCHES = [
    name for name, options in SPACE.items() if {False, True} <= {o.get(name) for o in options}
]
PASSES = 2


MARGIN = 0.005  # recall@5 a change must add to the mean of the conversations it is fitted on


def fit(devs: list[Dev], start: Ranking = FINAL) -> Ranking:
    """Coordinate ascent of recall@5 over `devs`, from `start`: per dimension, its best
    option, kept only if it lowers none of the conversations and raises their mean by
    `MARGIN` at least (a first, plain ascent that took any gain of the mean fitted noise:
    held-out recall@5 0.598 against the defaults' 0.635)."""
    best = start
    for _ in range(PASSES):
        moved = False
        for options in SPACE.values():
            held = [d.recall(best) for d in devs]
            chosen, gain = best, MARGIN - 1e-9
            for option in options:
                trial = replace(best, **option)
                if trial == best:
                    continue
                scores = [d.recall(trial) for d in devs]
                if min(s - h for s, h in zip(scores, held, strict=True)) < 0:
                    continue
                if fmean(scores) - fmean(held) > gain:
                    chosen, gain = trial, fmean(scores) - fmean(held)
            if chosen != best:
                best, moved = chosen, True
        if not moved:
            break
    return best


@dataclass
class Fold:
    held_out: Dev
    fitted: Ranking

    def changed(self) -> dict[str, Any]:
        return changed(self.fitted)


def changed(ranking: Ranking) -> dict[str, Any]:
    """The ranking's constants and switches that differ from the defaults."""
    return {k: getattr(ranking, k) for k in FIELDS if getattr(ranking, k) != getattr(FINAL, k)}


def leave_one_out(devs: list[Dev]) -> list[Fold]:
    return [Fold(held_out=d, fitted=fit([o for o in devs if o is not d])) for d in devs]


def _switched(ranking: Ranking, name: str, on: bool) -> Ranking:
    """`ranking` with one boolean switch set (by name)."""
    values: dict[str, Any] = {name: on}
    return replace(ranking, **values)


def switch_effects(folds: list[Fold]) -> dict[str, list[float]]:
    """Per switch, per fold: held-out recall@5 of the fitted ranking with the switch on,
    less with it off (the other constants as fitted)."""
    effects: dict[str, list[float]] = {}
    for name in SWITCHES:
        effects[name] = [
            f.held_out.recall(_switched(f.fitted, name, True))
            - f.held_out.recall(_switched(f.fitted, name, False))
            for f in folds
        ]
    return effects
