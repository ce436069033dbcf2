"""What the write-path parity tests share: the world each case acts on, the ids to
mask when two worlds are compared, and the set-up of session cases."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.test import Client

from memory_admin.jobs.tasks import formation_settings
from memory_admin.stores import get_store
from streams.actions import Actor
from streams.actions.sessions import do_session_form
from streams.core.documents import Job, Observation, Scope, utcnow
from streams.jobs import job_create
from streams.memory.formation import IncomingMessage, messages_ingest
from streams.memory.observations import observation_list
from streams.store import MemoryStore
from tests.ui.helpers import scope_with_history

API = "/api/v1"
API_ACTOR = "api:parity-key"
UI_ACTOR = "ui:parity-admin"
JSON = "application/json"
OBJECT_ID = re.compile(r"[0-9a-f]{24}")


@dataclass
class World:
    """What a case acts on: a scope with two versions and three pending observations
    (user `u-gene`), one of its observations and a failed job of its agent."""

    agent_id: str
    scope: Scope
    observation: Observation
    failed_job: Job

    def ids(self) -> set[str]:
        return {self.scope.id, self.observation.id, self.failed_job.id}


def make_world(store: MemoryStore, agent_id: str, scope_type: str = "individual") -> World:
    scope = scope_with_history(store, agent_id=agent_id, scope_type=scope_type)
    observation = observation_list(store=store, scope=scope, limit=1).items[0]
    job = job_create(store=store, kind="consolidation", agent_id=agent_id, trigger="threshold")
    store.jobs.start(job.id_oid, now=utcnow(), stale_before=utcnow())
    store.jobs.finish(job.id_oid, status="failed", now=utcnow(), error="LLMError", llm_calls=1)
    return World(agent_id=agent_id, scope=scope, observation=observation, failed_job=job)


def masked(value: Any, ids: set[str]) -> Any:
    """The summary with the world's, the jobs' and new objects' ids replaced, so two
    worlds compare."""
    if isinstance(value, dict):
        return {k: masked(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, ids) for v in value]
    if isinstance(value, str) and (value in ids or OBJECT_ID.fullmatch(value)):
        return "<id>"
    return value


TEMPLATE = (
    "Fold these into the memory of {scope} in at most {max_words} words.\n"
    "Current: {consolidation}\nNew:\n{observations}"
)
MESSAGE = {"id": "m1", "role": "user", "content": "I moved to Porto."}


def ingest_one(store: MemoryStore, w: World, message_id: str = "m0") -> None:
    """A buffered, unformed message in session s1 (no audit: the service, not the action)."""
    messages_ingest(
        store=store,
        agent_id=w.agent_id,
        session_id="s1",
        user_id="u-gene",
        user_name="Gene",
        groups=[],
        messages=[IncomingMessage(id=message_id, role="user", content="I like tea.")],
        settings=formation_settings(),
    )


def api_form(c: Client, w: World) -> Any:
    ingest_one(get_store(), w)
    return c.post(f"{API}/agents/{w.agent_id}/sessions/s1/form")


def cli_form(store: MemoryStore, w: World) -> Any:
    ingest_one(store, w)
    return do_session_form(
        store=store,
        actor=Actor.cli(),
        agent_id=w.agent_id,
        session_id="s1",
        settings=formation_settings(),
    )
