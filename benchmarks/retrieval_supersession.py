"""Retrieval quality with supersession on and off (issue 42): does "newer wins" cost recall?

`python -m benchmarks retrieval_quality --supersession both` (or `on`, `off`). The three
dev conversations are loaded twice, each turn one observation of one user's own scope
through the write path (`append_in_transaction`): once with supersession off (flagged
contradictions only, as before), once on (a detected contradiction supersedes the older
turn at once, and search leaves it out). Then the final ranking's recall@1/5/10 per
conversation, and the leave-one-out held-out recall@5 (every constant fitted on the
other two conversations), both ways. A turn that is evidence for a question and was
superseded is counted, so a loss would show where it comes from.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from statistics import fmean
from typing import Any

from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_table
from benchmarks.retrieval_loo import Dev, MemoStore, leave_one_out
from streams.memory import supersession
from streams.search.index import search_scopes
from streams.search.ranking import FINAL
from streams.store import MemoryStore

MODES = {"off": False, "on": True}


def run_modes(modes: list[str]) -> None:
    from benchmarks.locomo import AGENT, CATEGORIES, DEV, USER, _load, _turns

    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        per_mode: dict[str, list[Dev]] = {}
        superseded: dict[tuple[str, str], tuple[int, int]] = {}
        for mode in modes:
            supersession.ENABLED = MODES[mode]
            devs = []
            for path in DEV:
                conversation = json.loads(path.read_text())
                turns = _turns(conversation)
                questions = [q for q in conversation["qa"] if q.get("category") in CATEGORIES]
                name = f"bench_supersede_{mode}_{path.stem.replace('-', '_')}"
                client.drop_database(name)
                store = MemoryStore(client, name)
                _load(store, turns)
                devs.append(_dev(store, path, turns, questions, AGENT, USER))
                superseded[(mode, path.stem)] = _superseded_counts(store, questions)
            per_mode[mode] = devs
        supersession.ENABLED = True
        _print(per_mode, superseded)
        client.close()


def _dev(store: MemoryStore, path: Path, turns, questions, agent: str, user: str) -> Dev:
    return Dev(
        name=path.stem,
        turns=turns,
        questions=questions,
        store=store,
        memo=MemoStore(store),
        scopes=search_scopes(store=store, agent_id=agent, user_id=user),
        now=turns[-1][2] + timedelta(days=1),
    )


def _superseded_counts(store: MemoryStore, questions: list[dict]) -> tuple[int, int]:
    """(superseded turns, of them evidence for a question)."""
    evidence = {e for q in questions for e in q["evidence"]}
    turns = [
        d["source_message_ids"][0]
        for d in store.seeding.find(
            "observations", {"superseded_by": {"$exists": True}}, {"source_message_ids": 1}
        )
    ]
    return len(turns), sum(1 for t in turns if t in evidence)


HEADERS = [
    "supersession",
    "conversation",
    "questions",
    "superseded turns",
    "of them evidence",
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@5 held out (LOO)",
]


def _print(per_mode: dict[str, list[Dev]], superseded: dict) -> None:
    rows = []
    loo: dict[str, list[float]] = {}
    for mode, devs in per_mode.items():
        for d in devs:
            count, evidence = superseded[(mode, d.name)]
            print(  # the defaults first: the fit below takes long on a loaded machine
                f"{mode} {d.name}: superseded {count} (evidence {evidence}), final "
                f"recall@5 {d.recall(FINAL):.3f}",
                flush=True,
            )
    for mode, devs in per_mode.items():
        folds = leave_one_out(devs)
        loo[mode] = [f.held_out.recall(f.fitted) for f in folds]
        print(f"{mode}: held-out recall@5 {[round(x, 3) for x in loo[mode]]}", flush=True)
        rows += _mode_rows(mode, devs, loo[mode], superseded)
    print_table(
        "Supersession on and off: the final ranking on the dev conversations, and the "
        "leave-one-out held-out recall@5 (fitted on the other two)",
        HEADERS,
        rows,
    )
    if set(loo) == set(MODES):
        delta = fmean(loo["on"]) - fmean(loo["off"])
        verdict = "does not lower" if delta >= -0.0005 else "LOWERS"
        print(f"supersession {verdict} held-out recall@5 ({delta:+.3f})")


def _mode_rows(
    mode: str, devs: list[Dev], held_out: list[float], superseded: dict
) -> list[list[object]]:
    """A row per conversation of one mode, and their mean."""
    rows: list[list[object]] = []
    for d, held in zip(devs, held_out, strict=True):
        count, evidence = superseded[(mode, d.name)]
        rows.append(
            [
                mode,
                d.name,
                len(d.questions),
                count,
                evidence,
                f"{d.recall(FINAL, 1):.3f}",
                f"{d.recall(FINAL):.3f}",
                f"{d.recall(FINAL, 10):.3f}",
                f"{held:.3f}",
            ]
        )
    rows.append(
        [
            mode,
            "mean",
            sum(len(d.questions) for d in devs),
            sum(superseded[(mode, d.name)][0] for d in devs),
            sum(superseded[(mode, d.name)][1] for d in devs),
            f"{fmean(d.recall(FINAL, 1) for d in devs):.3f}",
            f"{fmean(d.recall(FINAL) for d in devs):.3f}",
            f"{fmean(d.recall(FINAL, 10) for d in devs):.3f}",
            f"{fmean(held_out):.3f}",
        ]
    )
    return rows
