"""How `end_to_end` scores a context: the evidence turns it cites, through observation
provenance, and the answer's key terms its consolidation states (and the same two for
raw turns, the search's top 5 as the context)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from bson import ObjectId

from benchmarks.pipeline import Session
from streams.context.assemble import context_assemble
from streams.memory.fidelity import consolidation_fidelity
from streams.search.index import search_observations
from streams.store import MemoryStore

CATEGORIES = {1, 2, 3, 4}
AGENT = "e2e-agent"
WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = (
    "the and for are was were has had have with that this from into about their they them "
    "she her his him its our you your not but all any can did does one who what when where "
    "which why how will would could should been being also just very than then there some "
    "more most other over such only own same too yes"
)
STOP = frozenset(WORD.findall(STOP_WORDS))  # small function words: never a key term


@dataclass
class Scores:
    questions: int = 0
    evidence: float = 0.0  # mean share of evidence turns cited
    hit: float = 0.0  # share of questions with at least one evidence turn cited
    terms: float = 0.0  # mean share of the answer's key terms stated
    tokens: float = 0.0  # mean context size (estimated tokens)
    stored: int = 0  # observations stored


def key_terms(answer: Any) -> set[str]:
    return {w for w in WORD.findall(str(answer).lower()) if (len(w) >= 3 or w.isdigit())} - STOP


def share(found: set[str], wanted: set[str]) -> float:
    return len(found & wanted) / len(wanted) if wanted else 0.0


def questions_for(path: Path, sessions: list[Session]) -> list[dict[str, Any]]:
    """The questions of categories 1-4 whose evidence turns were all ingested."""
    ingested = {t.id for s in sessions for t in s.turns}
    qa = json.loads(path.read_text(encoding="utf-8"))["qa"]
    return [
        q
        for q in qa
        if q.get("category") in CATEGORIES and q.get("evidence") and set(q["evidence"]) <= ingested
    ]


class Cited:
    """The turns a context cites, through observation provenance (memoised per version)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._versions: dict[str, tuple[set[str], str]] = {}

    def observations(self, ids: list[str]) -> set[str]:
        found = self.store.observations.get_many([ObjectId(i) for i in ids])
        return {m for o in found for m in o.source_message_ids}

    def version(self, key: str) -> tuple[set[str], str]:
        """(turns its stated observations come from, its text) for `<scope id>:<version>`."""
        if key not in self._versions:
            scope_id, _, number = key.partition(":")
            oid = ObjectId(scope_id)
            text = (self.store.consolidations.get(oid, int(number)) or _Empty()).text
            absorbed: list[str] = []
            for v in range(1, int(number) + 1):
                entry = self.store.consolidations.get(oid, v)
                absorbed += entry.absorbed_observation_ids if entry else []
            found = self.store.observations.get_many([ObjectId(i) for i in dict.fromkeys(absorbed)])
            unstated = set(
                consolidation_fidelity(
                    previous=None, text=text, absorbed=[(o.id, o.content) for o in found]
                ).unstated_observation_ids
            )
            turns = {m for o in found if o.id not in unstated for m in o.source_message_ids}
            self._versions[key] = (turns, text)
        return self._versions[key]


class _Empty:
    text = ""


def asked_about(question: str, speakers: dict[str, str]) -> list[str]:
    """The speakers' ids the question names, or all of them."""
    named = [uid for uid, name in speakers.items() if name.lower() in question.lower()]
    return named or list(speakers)


def score_pipeline(
    store: MemoryStore, questions: list[dict[str, Any]], speakers: dict[str, str], now: Any
) -> Scores:
    cited = Cited(store)
    evidence, hits, terms, tokens = [], [], [], []
    for q in questions:
        turns: set[str] = set()
        texts: list[str] = []
        size = 0
        for uid in asked_about(q["question"], speakers):
            context = context_assemble(
                store=store,
                agent_id=AGENT,
                user_id=uid,
                user_name=speakers[uid],
                message=q["question"],
                now=now,
                log=False,
                record_access=False,
            )
            size += context.tokens
            turns |= cited.observations(context.quotes["quoted_observation_ids"])
            for key in context.quotes["quoted_versions"]:
                stated, text = cited.version(key)
                turns |= stated
                texts.append(text)
        wanted = set(q["evidence"])
        evidence.append(share(turns, wanted))
        hits.append(1.0 if turns & wanted else 0.0)
        terms.append(share(set(WORD.findall(" ".join(texts).lower())), key_terms(q["answer"])))
        tokens.append(size)
    return _scores(evidence, hits, terms, tokens)


def _scores(evidence: list, hits: list, terms: list, tokens: list) -> Scores:
    if not evidence:
        return Scores()
    return Scores(len(evidence), fmean(evidence), fmean(hits), fmean(terms), fmean(tokens))


def score_raw_turns(
    store: MemoryStore, sessions: list[Session], questions: list[dict[str, Any]]
) -> Scores:
    """Today's figure: each turn an observation, the top 5 of the search the context."""
    from benchmarks.locomo import AGENT as RAW_AGENT
    from benchmarks.locomo import USER, _load

    turns = [(t.id, f"{t.user_name}: {t.text}", t.at) for s in sessions for t in s.turns]
    _load(store, turns)
    text_of = {turn_id: text for turn_id, text, _ in turns}
    evidence, hits, terms, tokens = [], [], [], []
    for q in questions:
        found = search_observations(
            store=store,
            agent_id=RAW_AGENT,
            user_id=USER,
            query=q["question"],
            limit=5,
            record_access=False,
            now=turns[-1][2],
        )
        top = [h.observation.source_message_ids[0] for h in found]
        wanted = set(q["evidence"])
        evidence.append(share(set(top), wanted))
        hits.append(1.0 if set(top) & wanted else 0.0)
        words = set(WORD.findall(" ".join(text_of[t] for t in top).lower()))
        terms.append(share(words, key_terms(q["answer"])))
        tokens.append(sum(len(text_of[t]) for t in top) / 4)
    scores = _scores(evidence, hits, terms, tokens)
    scores.stored = len(turns)
    return scores
