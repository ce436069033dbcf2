"""The whole write path, run in one process for the end-to-end and real-model checks.

Sessions are ingested as the API ingests them (`messages_ingest`, one message per turn,
each with its speaker), formed (`formation_run`), their follow-ups run (threshold
consolidations, propagation, left-over formations), and at the end every scope with
pending observations is consolidated on demand, as an operator would. Every job goes
through `job_execute`, so its result, its error and the usage counters are what a
worker records. The model is whatever provider is given: the offline one, or the
OpenAI-compatible server the settings name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bson import ObjectId

from streams.actions.jobs import do_propagation_run
from streams.core.documents import Job, Scope
from streams.core.exceptions import Conflict
from streams.jobs import JobRun, job_execute
from streams.llm.port import LLMProvider
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import (
    FormationSettings,
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.scopes import scope_list
from streams.store import MemoryStore

LOCOMO_TIME = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class Turn:
    id: str  # the LoCoMo `dia_id` ("D3:5"), kept as the message id: the evidence id
    user_id: str
    user_name: str
    text: str
    at: datetime


@dataclass(frozen=True)
class Session:
    id: str
    turns: list[Turn]
    groups: list[dict[str, str]] = field(default_factory=list)


@dataclass
class JobOutcome:
    kind: str
    status: str  # "succeeded" | "failed"
    result: dict[str, Any]
    error: str | None


def speaker_id(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def locomo_sessions(path: Path, *, limit: int | None = None) -> list[Session]:
    """A LoCoMo conversation's sessions, each turn a user message of its speaker."""
    conversation = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    n = 1
    while f"session_{n}" in conversation and (limit is None or n <= limit):
        when = datetime.strptime(conversation[f"session_{n}_date_time"], LOCOMO_TIME)
        turns = []
        for turn in conversation[f"session_{n}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            name = turn["speaker"]
            turns.append(
                Turn(turn["dia_id"], speaker_id(name), name, text, when.replace(tzinfo=UTC))
            )
        sessions.append(Session(f"{path.stem}-s{n}", turns))
        n += 1
    return sessions


class Pipeline:
    """One agent's write path over `store` with `llm`; `outcomes` lists every job run."""

    def __init__(
        self,
        *,
        store: MemoryStore,
        llm: LLMProvider,
        agent_id: str,
        settings: FormationSettings | None = None,
        fidelity_floor: float | None = None,
        attempts: int = 1,
    ) -> None:
        self.store, self.llm, self.agent_id = store, llm, agent_id
        self.settings = settings or FormationSettings()
        self.fidelity_floor = fidelity_floor
        self.attempts = attempts  # a failed job is run again, as the worker's retry does
        self.outcomes: list[JobOutcome] = []

    def ingest(self, session: Session) -> None:
        """Buffer the session's turns (the first speaker's request carries the others'
        messages, as a group chat does), form it, and run what follows."""
        first = session.turns[0]
        ingested = messages_ingest(
            store=self.store,
            agent_id=self.agent_id,
            session_id=session.id,
            user_id=first.user_id,
            user_name=first.user_name,
            groups=session.groups,
            messages=[
                IncomingMessage(
                    id=t.id,
                    role="user",
                    content=t.text,
                    created_at=t.at,
                    user_id=t.user_id,
                    user_name=t.user_name,
                )
                for t in session.turns
            ],
            settings=self.settings,
        )
        job = ingested.formation_job or formation_request(
            store=self.store, agent_id=self.agent_id, session_id=session.id, trigger="api"
        )
        self.run([job])

    def consolidate_all(self) -> None:
        """Consolidate every scope of the agent that has pending observations (and run
        the propagations that follow, and the consolidations those cause)."""
        for _ in range(3):  # propagation makes new pending work in the targets
            scopes = self.scopes()
            jobs = []
            for scope in scopes:
                if not scope.pending_observation_ids:
                    continue
                try:
                    jobs.append(
                        consolidation_request(
                            store=self.store, scope=scope, trigger="manual", actor="pipeline"
                        )
                    )
                except Conflict:
                    continue
            if not jobs:
                return
            self.run(jobs)

    def scopes(self) -> list[Scope]:
        """Every scope of the agent (a few here), through the paginated selector."""
        found: list[Scope] = []
        cursor = None
        while True:
            page = scope_list(store=self.store, agent_id=self.agent_id, cursor=cursor, limit=100)
            found += page.items
            cursor = page.next_cursor
            if not cursor:
                return found

    def run(self, jobs: list[Job]) -> None:
        """Run the jobs and their follow-ups, breadth first."""
        queue = list(jobs)
        while queue:
            job = queue.pop(0)
            work = self._work(job.kind)
            if work is None:
                continue
            for _ in range(self.attempts):
                try:
                    run = job_execute(store=self.store, job_id=job.id, llm=self.llm, work=work)
                except Exception:  # noqa: BLE001 - a failed job is an outcome, recorded below
                    run = None
                done = self.store.jobs.get(ObjectId(job.id))
                if done is not None:
                    self.outcomes.append(
                        JobOutcome(done.kind, done.status, dict(done.result or {}), done.error)
                    )
                if run is not None:
                    queue += run.follow_ups
                    break

    def _work(self, kind: str) -> Callable[[JobRun], None] | None:
        store = self.store
        if kind == "formation":
            return lambda run: formation_run(store=store, run=run, settings=self.settings)
        if kind == "consolidation":
            if self.fidelity_floor is None:
                return lambda run: consolidation_run(store=store, run=run)
            floor = self.fidelity_floor
            return lambda run: consolidation_run(store=store, run=run, fidelity_floor=floor)
        if kind == "propagation":
            return lambda run: do_propagation_run(store=store, run=run)
        return None
