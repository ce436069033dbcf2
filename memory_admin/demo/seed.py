"""A believable demo data set, written through the same services the app uses.

Three agents, thirty users, four groups, two collective shards with their own
extraction guidance (saved as version 1 of their prompt history), a few hundred
observations and consolidations with a few versions of history. Every observation
cites a session that exists: its messages were ingested as conversations are
(`messages_ingest`) and formed by a formation job, group sessions with several
speakers. A few turns went through the chat proxy (their calls are recorded and
formed by the offline extractor), one correction rebuilt a consolidation, and a
prompt check is saved. Jobs run here, in order, on the offline LLM provider (never
a paid API). Deterministic (seeded), so a screenshot of the demo looks the same on
every machine. The world itself (names, what is said, the facts) is `memory_admin.demo.data`.

Long because: one deterministic script whose order is the seed (agents, sessions,
chat turns, a correction, the review queue); its world is already in `demo/data.py`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bson import ObjectId

from memory_admin.demo.data import (
    AGENTS,
    AGREEMENTS,
    CHAT_TURNS,
    COLLECTIVE_FACTS,
    FIRST_NAMES,
    GROUP_FACTS,
    GROUPS,
    HELD_FOR_REVIEW,
    PERSONAL,
    PROMPT_CHECK,
    REPLIES,
    SAID,
    SHARD_FACTS,
    SHARDS,
)
from streams.actions import base as actions_base
from streams.actions.base import Actor
from streams.actions.chat import chat_catch_up_run, do_chat_turn_finish
from streams.actions.chat_ingest import chat_ingest_run
from streams.actions.jobs import do_propagation_run
from streams.actions.observations import do_observation_add, do_observation_delete
from streams.actions.prompts import do_prompt_check_create
from streams.actions.scopes import do_scope_create
from streams.context.chat import ChatMemory, ChatOutcome, chat_prepare
from streams.core.documents import Job, Observation, Scope, utcnow
from streams.jobs import JobRun, job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.consolidation import consolidation_commit
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import (
    FormationSettings,
    IncomingMessage,
    formation_commit,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observations import observation_list
from streams.memory.rebuild import rebuild_run
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.memory.source_change import source_change_run
from streams.records.activity import activity_record
from streams.store import MemoryStore

DEMO_INGEST = FormationSettings(max_messages=10**6, max_tokens=10**9, min_messages=10**6)
DEMO_ACTOR = Actor.cli()


@dataclass
class DemoCounts:
    agents: int = 0
    scopes: int = 0
    observations: int = 0
    versions: int = 0
    sessions: int = 0
    chat_calls: int = 0
    jobs: int = 0


@dataclass(frozen=True)
class Speaker:
    user_id: str
    name: str
    groups: tuple[tuple[str, str], ...] = ()

    def group_docs(self) -> list[dict[str, str]]:
        return [{"id": g, "name": n} for g, n in self.groups]


@dataclass
class Said:
    """One fact as it was said: the observation's text, and who said what."""

    observation: str
    utterance: str
    speaker: Speaker
    chime_in: Speaker | None = None  # a second speaker confirming (group sessions)
    related: list[str] = field(default_factory=list)


def demo_present(*, store: MemoryStore) -> bool:
    return store.agents.get(AGENTS[0]) is not None


def seed_demo(
    *, store: MemoryStore, seed: int = 7, settings: FormationSettings | None = None
) -> DemoCounts:
    """Write the demo data set; run it on an empty store (see `demo_present`)."""
    rng = random.Random(seed)
    counts = DemoCounts(agents=len(AGENTS))
    runner = _Runner(store, counts, settings or FormationSettings())
    names = list(FIRST_NAMES)
    with runner.collecting():
        for index, agent_id in enumerate(AGENTS):
            _seed_agent(store, rng, runner, agent_id, names[index * 10 : index * 10 + 10], counts)
        for agent_id, user_number, question, answer in CHAT_TURNS:
            _chat_turn(store, runner, agent_id, names, user_number, question, answer, counts)
        _correction(store, runner)
        _held_for_review(store)
        do_prompt_check_create(store=store, actor=DEMO_ACTOR, **PROMPT_CHECK)  # type: ignore[arg-type]
    return counts


def _speakers(agent_id: str, names: list[str]) -> list[Speaker]:
    groups = GROUPS[agent_id]
    return [
        Speaker(_user_id(name), name, (groups[number % len(groups)],))
        for number, name in enumerate(names)
    ]


def _user_id(name: str) -> str:
    return f"user-{name.lower().replace('á', 'a').replace('í', 'i')}"


def _seed_agent(
    store: MemoryStore,
    rng: random.Random,
    runner: _Runner,
    agent_id: str,
    names: list[str],
    counts: DemoCounts,
) -> None:
    speakers = _speakers(agent_id, names)
    for speaker in speakers:
        (group_id, team), *_ = speaker.groups
        scope, _ = scope_get_or_create(
            store=store,
            key=ScopeKey.individual(agent_id, speaker.user_id),
            display_name=speaker.name,
        )
        store.scopes.remember_groups(ObjectId(scope.id), speaker.group_docs())
        said = [
            Said(
                t.format(name=speaker.name, team=team),
                SAID[t].format(team=team),
                speaker,
                related=[speaker.user_id],
            )
            for t in rng.sample(PERSONAL[agent_id], 8)
        ]
        _fill(store, rng, runner, scope, said, counts, chunk=2)
    for group_id, team in GROUPS[agent_id]:
        scope = do_scope_create(
            store=store, actor=DEMO_ACTOR, key=ScopeKey.group(agent_id, group_id), display_name=team
        )
        members = [s for s in speakers if s.groups[0][0] == group_id]
        said = []
        for number, template in enumerate(GROUP_FACTS):
            speaker = members[number % len(members)]
            other = members[(number + 1) % len(members)]
            said.append(
                Said(
                    template.format(team=team),
                    SAID[template],
                    speaker,
                    chime_in=other if other != speaker else None,
                    related=[speaker.user_id],  # who said it (forgetting them rebuilds this)
                )
            )
        _fill(store, rng, runner, scope, said, counts, chunk=3)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.collective(agent_id))
    said = [_said_by(t, rng.choice(speakers)) for t in COLLECTIVE_FACTS]
    _fill(store, rng, runner, scope, said, counts, chunk=1)
    for shard_name, prompt in SHARDS.get(agent_id, []):
        # Created as an operator would: the guidance is version 1 of the shard's prompt history.
        scope = do_scope_create(
            store=store,
            actor=DEMO_ACTOR,
            key=ScopeKey.collective(agent_id, shard_name),
            extraction_prompt=prompt,
        )
        said = [_said_by(t, rng.choice(speakers)) for t in SHARD_FACTS[shard_name]]
        _fill(store, rng, runner, scope, said, counts, chunk=1)


def _said_by(text: str, speaker: Speaker) -> Said:
    return Said(text, SAID[text], speaker, related=[speaker.user_id])


def _fill(
    store: MemoryStore,
    rng: random.Random,
    runner: _Runner,
    scope: Scope,
    said: list[Said],
    counts: DemoCounts,
    *,
    chunk: int,
) -> None:
    """The facts said in sessions over the last weeks, each session formed by a formation
    job into the observations it cites; then two consolidation runs."""
    counts.scopes += 1
    now = utcnow()
    observations: list[Observation] = []
    for start in range(0, len(said), chunk):
        part = said[start : start + chunk]
        position = len(said) - start
        observed = now - timedelta(days=position * rng.randint(2, 6), minutes=rng.randint(0, 600))
        session_id = f"sess-{rng.randrange(16**6):06x}"
        observations += _session(store, runner, scope, session_id, part, observed, counts)
    store.agents.adjust_counters(
        scope.agent_id, now=now, observations=len(observations), pending=len(observations)
    )
    counts.observations += len(observations)
    # The dashboard's chart reads the daily counters: count each observation on its own day,
    # as formation does when it writes one, so the seeded weeks show on the chart.
    for observation in observations:
        activity_record(
            store=store, agent_id=scope.agent_id, now=observation.created_at, observations=1
        )
    # Version 1 absorbs the older half, version 2 most of the rest; the newest stay pending.
    first, second = len(said) // 2, len(said) - 2
    for absorbed in (observations[:first], observations[first:second]):
        if not absorbed:
            continue
        current = scope_get(store=store, scope_id=scope.id)
        known = [o.content for o in observations[: observations.index(absorbed[-1]) + 1]]
        consolidation_commit(
            store=store,
            scope=current,
            expected_version=current.consolidation_version,
            text=" ".join(known),
            absorbed_ids=[o.id for o in absorbed],
            trigger="threshold",
            actor="demo-seed",
        )
        counts.versions += 1


def _session(
    store: MemoryStore,
    runner: _Runner,
    scope: Scope,
    session_id: str,
    said: list[Said],
    started: datetime,
    counts: DemoCounts,
) -> list[Observation]:
    """Ingest one conversation; its formation writes one observation per fact, citing the
    message that said it and the reply."""
    caller = said[0].speaker
    messages, cited = _conversation(session_id, said, started)
    messages_ingest(
        store=store,
        agent_id=scope.agent_id,
        session_id=session_id,
        user_id=caller.user_id,
        user_name=caller.name,
        groups=caller.group_docs(),
        messages=messages,
        settings=DEMO_INGEST,
    )
    counts.sessions += 1
    observations = [
        Observation(
            scope_id=scope.id,
            agent_id=scope.agent_id,
            content=fact.observation,
            observed_at=when,
            created_at=when + timedelta(minutes=2),
            source_session_id=session_id,
            source_message_ids=ids,
            related_user_ids=list(fact.related),
        )
        for fact, ids, when in cited
    ]
    job = formation_request(
        store=store,
        agent_id=scope.agent_id,
        session_id=session_id,
        trigger="demo",
        settings=runner.settings,
    )
    runner.run(job, _forming(store, runner, scope, session_id, messages, observations))
    return observations


Cited = list[tuple[Said, list[str], datetime]]  # each fact, the messages citing it, when


def _conversation(
    session_id: str, said: list[Said], started: datetime
) -> tuple[list[IncomingMessage], Cited]:
    """The session's messages (each fact said, perhaps agreed with, and answered), and
    for each fact the ids of the messages that said it and the reply."""
    messages: list[IncomingMessage] = []
    cited: Cited = []
    at = started
    for number, fact in enumerate(said):
        base = f"{session_id}-m{len(messages) + 1}"
        ids = [base]
        messages.append(_message(base, "user", fact.utterance, at, fact.speaker))
        if fact.chime_in is not None:
            at += timedelta(seconds=40)
            agree = f"{session_id}-m{len(messages) + 1}"
            text = AGREEMENTS[number % len(AGREEMENTS)]
            messages.append(_message(agree, "user", text, at, fact.chime_in))
            ids.append(agree)
        at += timedelta(seconds=20)
        reply = f"{session_id}-m{len(messages) + 1}"
        messages.append(IncomingMessage(reply, "assistant", REPLIES[number % len(REPLIES)], at))
        ids.append(reply)
        cited.append((fact, ids, at))
        at += timedelta(minutes=3)
    return messages, cited


def _forming(
    store: MemoryStore,
    runner: _Runner,
    scope: Scope,
    session_id: str,
    messages: list[IncomingMessage],
    observations: list[Observation],
) -> Callable[[JobRun], None]:
    """The formation's work: commit the observations the seed says the session gives."""

    def form(run: JobRun) -> None:
        buffer = store.sessions.get_buffer(scope.agent_id, session_id)
        assert buffer is not None
        unformed = store.sessions.unformed(scope.agent_id, session_id, limit=len(messages))
        formation_commit(
            store=store,
            job=run.job,
            buffer=buffer,
            messages=unformed,
            by_scope={scope.id: (scope, observations)},
            settings=runner.settings,
            now=utcnow(),
        )
        run.result = {
            "messages": len(unformed),
            "observations": len(observations),
            "dropped": 0,
            "speakers": len({m.user_id for m in messages if m.user_id}),
            "scopes": {scope.id: len(observations)},
            "note": "demo data: the seed wrote the observations this session was said to give",
        }

    return form


def _message(
    message_id: str, role: str, content: str, at: datetime, speaker: Speaker
) -> IncomingMessage:
    return IncomingMessage(message_id, role, content, at, speaker.user_id, speaker.name)


def _chat_turn(
    store: MemoryStore,
    runner: _Runner,
    agent_id: str,
    names: list[str],
    user_number: int,
    question: str,
    answer: str,
    counts: DemoCounts,
) -> None:
    """One call through the chat proxy, as `/api/v1/chat/completions` makes it: the context
    from the seeded memory, the call record, the ingest job, and the session's formation."""
    offset = AGENTS.index(agent_id) * 10
    speaker = _speakers(agent_id, names[offset : offset + 10])[user_number]
    memory = ChatMemory(
        user_id=speaker.user_id,
        session_id=f"chat-{speaker.user_id}-1",
        user_name=speaker.name,
        groups=speaker.groups,
    )
    turn = chat_prepare(
        store=store,
        agent_id=agent_id,
        memory=memory,
        messages=[{"role": "user", "content": question}],
        actor="api:demo-agent",
    )
    outcome = ChatOutcome(
        outcome="answered",
        stream=False,
        model="gpt-4o-mini",
        upstream_model="gpt-4o-mini-2024-07-18",
        upstream_status=200,
        answer=answer,
        first_chunk_ms=410.0,
        duration_ms=1180.0,
    )
    job = do_chat_turn_finish(store=store, turn=turn, outcome=outcome)
    counts.chat_calls += 1
    assert job is not None
    runner.run_job(job)
    runner.run_job(
        formation_request(
            store=store,
            agent_id=agent_id,
            session_id=memory.session_id,
            trigger="api",
            settings=runner.settings,
        )
    )


def _correction(store: MemoryStore, runner: _Runner) -> None:
    """Support deletes an outdated fact the consolidation had absorbed: its rebuild runs."""
    scope = store.scopes.find_by_identity(
        **ScopeKey.individual(AGENTS[0], _user_id(FIRST_NAMES[0])).identity()
    )
    assert scope is not None
    absorbed = observation_list(store=store, scope=scope, status="consolidated", limit=1).items[0]
    do_observation_delete(store=store, actor=Actor.ui("admin"), observation=absorbed)


def _held_for_review(store: MemoryStore) -> None:
    collective = store.scopes.find_by_identity(**ScopeKey.collective(AGENTS[0]).identity())
    assert collective is not None
    for content in HELD_FOR_REVIEW:
        do_observation_add(
            store=store, actor=Actor.api("demo-agent"), scope=collective, content=content
        )


class _Runner:
    """Runs the jobs the seed's actions schedule, here and in order, on the offline LLM."""

    def __init__(self, store: MemoryStore, counts: DemoCounts, settings: FormationSettings):
        self.store = store
        self.counts = counts
        self.settings = settings
        self.llm = OfflineProvider()
        self.scheduled: list[Job] = []

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Actions hand their jobs to this runner instead of the app's queue while seeding."""
        previous = actions_base.current_dispatcher()
        actions_base.register_dispatcher(self.scheduled.extend)
        try:
            yield
            self.drain()
        finally:
            actions_base.register_dispatcher(previous)

    def drain(self) -> None:
        while self.scheduled:
            self.run_job(self.scheduled.pop(0))

    def run_job(self, job: Job) -> None:
        store, settings = self.store, self.settings
        works: dict[str, Callable[[JobRun], None]] = {
            "formation": lambda run: formation_run(store=store, run=run, settings=settings),
            "chat_ingest": lambda run: chat_ingest_run(store=store, run=run, settings=settings),
            "consolidation": lambda run: consolidation_run(store=store, run=run),
            "propagation": lambda run: do_propagation_run(store=store, run=run),
            "rebuild": lambda run: rebuild_run(store=store, run=run),
            "source_change": lambda run: source_change_run(store=store, run=run),
            "chat_catch_up": lambda run: chat_catch_up_run(store=store, run=run),
        }
        self.run(job, works[job.kind])
        self.drain()

    def run(self, job: Job, work: Callable[[JobRun], None]) -> None:
        run = job_execute(store=self.store, job_id=job.id, llm=self.llm, work=work)
        self.counts.jobs += 1
        if run is not None:
            self.scheduled.extend(run.follow_ups)
