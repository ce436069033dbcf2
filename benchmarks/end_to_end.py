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
import time
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from benchmarks.end_to_end_scores import (
    AGENT,
    Scores,
    questions_for,
    score_pipeline,
    score_raw_turns,
)
from benchmarks.pipeline import Pipeline, locomo_sessions
from streams.llm.port import LLMProvider
from streams.store import MemoryStore

__all__ = ["AGENT", "LOCOMO", "Scores", "questions_for", "run", "score_pipeline"]

LOCOMO = Path(os.environ.get("LOCOMO_DEV_DIR", "/work/shared/data/locomo-dev"))
CONVERSATIONS = ("conv-26", "conv-30", "conv-44")


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
            client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
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

    from memory_admin.integrations.llm import get_llm_provider

    settings.MEMORY_LLM_PROVIDER = "openai"
    return get_llm_provider(), f"model {settings.MEMORY_LLM_MODEL_FAST} (pipeline)"
