"""Memory quality end to end (issue 39, item 6): LoCoMo sessions through the whole pipeline.

Each dev conversation's sessions are ingested, formed, consolidated and propagated
(`benchmarks.pipeline`: the real request builders, the offline provider by default, or
the OpenAI-compatible server of `OPENAI_BASE_URL` with `--model`), then every question of
categories 1-4 whose evidence lies in the ingested sessions is asked, as the agent would
ask for context, for the speakers it names (both when it names neither). Per question:

- **evidence cited**: the share of its evidence turns the context cites: turns an
  observation shown in it was formed from (its sentence-level `source_message_ids`), or
  that an observation the consolidation shown states was formed from (stated: the
  fidelity measure finds its specific content in the text);
- **key terms stated**: the share of the answer's key terms (words of three letters or
  more, numbers; small function words out) that the consolidation texts in the context
  state.

"raw turns" is today's figure: every turn one observation, the search's top 5 as the
context (`benchmarks/retrieval_quality.py`'s recall@5), key terms counted in those five
turns. Nothing here is tuned, so there is no leave-one-out of its own; the search
ranking it uses was fitted on these conversations (`retrieval_quality`'s leave-one-out
gives its held-out figure).

`python -m benchmarks end_to_end [--sessions N] [--conversations conv-26,...] [--model]`.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from bson import ObjectId

from benchmarks.pipeline import Pipeline, Session, locomo_sessions
from streams.context.assemble import context_assemble
from streams.llm.port import LLMProvider
from streams.memory.fidelity import consolidation_fidelity
from streams.search.index import search_observations
from streams.store import MemoryStore

LOCOMO = Path(os.environ.get("LOCOMO_DEV_DIR", "/work/shared/data/locomo-dev"))
CONVERSATIONS = ("conv-26", "conv-30", "conv-44")
CATEGORIES = {1, 2, 3, 4}
AGENT = "e2e-agent"
WORD = re.compile(r"[a-z0-9]+")
STOP = set(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "has",
        "had",
        "have",
        "with",
        "that",
        "this",
        "from",
        "into",
        "about",
        "their",
        "they",
        "them",
        "she",
        "her",
        "his",
        "him",
        "its",
        "it's",
        "our",
        "you",
        "your",
        "not",
        "but",
        "all",
        "any",
        "can",
        "did",
        "does",
        "one",
        "who",
        "what",
        "when",
        "where",
        "which",
        "why",
        "how",
        "will",
        "would",
        "could",
        "should",
        "been",
        "being",
        "also",
        "just",
        "very",
        "than",
        "then",
        "there",
        "some",
        "more",
        "most",
        "other",
        "over",
        "such",
        "only",
        "own",
        "same",
        "too",
        "yes",
    ]
)


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
    import json

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
    from benchmarks.retrieval_quality import AGENT as RAW_AGENT
    from benchmarks.retrieval_quality import USER, _load

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


def run_conversation(
    *,
    path: Path,
    sessions_limit: int | None,
    make_store: Callable[[str], MemoryStore],
    llm: LLMProvider,
    label: str,
) -> dict[str, Scores]:
    """Raw turns and the pipeline (with `llm`) on one conversation: label -> scores."""
    sessions = locomo_sessions(path, limit=sessions_limit)
    questions = questions_for(path, sessions)
    speakers = {t.user_id: t.user_name for s in sessions for t in s.turns}
    raw = score_raw_turns(make_store(f"{path.stem}_raw"), sessions, questions)
    store = make_store(f"{path.stem}_pipeline")
    store.ensure_indexes()
    pipeline = Pipeline(store=store, llm=llm, agent_id=AGENT)
    for session in sessions:
        pipeline.ingest(session)
    pipeline.consolidate_all()
    scores = score_pipeline(store, questions, speakers, now=sessions[-1].turns[-1].at)
    scores.stored = sum(
        o.result.get("observations", 0) for o in pipeline.outcomes if o.kind == "formation"
    )
    return {"raw turns (search top 5)": raw, label: scores}


def table_rows(results: dict[str, dict[str, Scores]]) -> list[list[object]]:
    rows: list[list[object]] = []
    labels = list(dict.fromkeys(label for per in results.values() for label in per))
    for label in labels:
        per = {name: r[label] for name, r in results.items() if label in r}
        for name, s in per.items():
            rows.append(_row(name, label, s))
        rows.append(
            _row(
                "mean",
                label,
                Scores(
                    sum(s.questions for s in per.values()),
                    fmean(s.evidence for s in per.values()),
                    fmean(s.hit for s in per.values()),
                    fmean(s.terms for s in per.values()),
                    fmean(s.tokens for s in per.values()),
                    sum(s.stored for s in per.values()),
                ),
            )
        )
    return rows


def _row(name: str, label: str, s: Scores) -> list[object]:
    return [
        name,
        label,
        s.questions,
        s.stored,
        f"{s.evidence:.3f}",
        f"{s.hit:.3f}",
        f"{s.terms:.3f}",
        f"{s.tokens:.0f}",
    ]


HEADERS = [
    "conversation",
    "memory",
    "questions",
    "observations",
    "evidence cited",
    "any evidence",
    "key terms stated",
    "context tokens",
]


def run(
    sizes: list[int] | None = None,
    *,
    argv: list[str] | None = None,
    make_store: Callable[[str], MemoryStore] | None = None,
) -> dict[str, dict[str, Scores]]:
    del sizes
    parser = argparse.ArgumentParser(prog="python -m benchmarks end_to_end")
    parser.add_argument("--sessions", type=int, default=None, help="the first N of each")
    parser.add_argument("--conversations", default=",".join(CONVERSATIONS))
    parser.add_argument("--model", action="store_true", help="the server of OPENAI_BASE_URL")
    args = parser.parse_args(argv or [])
    from benchmarks.harness import embedded_server, print_table

    llm, label = provider(model=args.model)
    started = time.perf_counter()
    results: dict[str, dict[str, Scores]] = {}
    names = [n for n in args.conversations.split(",") if n]
    if make_store is not None:
        for name in names:
            results[name] = run_conversation(
                path=LOCOMO / f"{name}.json",
                sessions_limit=args.sessions,
                make_store=make_store,
                llm=llm,
                label=label,
            )
    else:
        from pymongo import MongoClient

        with embedded_server() as server:
            client = MongoClient(server.uri, tz_aware=True)
            for name in names:
                results[name] = run_conversation(
                    path=LOCOMO / f"{name}.json",
                    sessions_limit=args.sessions,
                    make_store=lambda db: MemoryStore(client, f"e2e_{db.replace('-', '_')}"),
                    llm=llm,
                    label=label,
                )
            client.close()
    seconds = time.perf_counter() - started
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python -m benchmarks end_to_end " + " ".join(args_shown(args))
    print_table(
        f"Memory quality end to end on the LoCoMo dev conversations ({command.strip()}; "
        f"{seconds:.0f} s, load average {load}; categories 1-4)",
        HEADERS,
        table_rows(results),
    )
    return results


def args_shown(args: argparse.Namespace) -> list[str]:
    shown = []
    if args.sessions:
        shown.append(f"--sessions {args.sessions}")
    if args.conversations != ",".join(CONVERSATIONS):
        shown.append(f"--conversations {args.conversations}")
    if args.model:
        shown.append("--model")
    return shown


def provider(*, model: bool) -> tuple[LLMProvider, str]:
    """The offline provider, or (`model`) the server the Django settings name."""
    if not model:
        from streams.llm.offline import OfflineProvider

        return OfflineProvider(), "offline provider (pipeline)"
    from django.conf import settings

    from memory_admin.llm import get_llm_provider

    settings.MEMORY_LLM_PROVIDER = "openai"
    return get_llm_provider(), f"model {settings.MEMORY_LLM_MODEL_FAST} (pipeline)"
