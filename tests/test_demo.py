"""The demo data set and the demo logins that `make run` creates."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from memory_admin.demo.data import AGENTS, PROMPT_CHECK
from streams.context.chat import chat_session_page
from streams.core.documents import utcnow
from streams.drafts.dry_run import recent_sessions
from streams.drafts.prompt_checks import checks_run
from streams.guard.review import review_queue
from streams.jobs import job_list
from streams.llm.offline import OfflineProvider
from streams.memory.consolidation import consolidation_history
from streams.memory.observations import observation_list
from streams.memory.scopes import scope_list
from streams.records.activity import activity_days


def test_seed_demo_builds_a_believable_data_set_through_the_services(store, capsys):
    call_command("seed_demo")
    assert "Seeded 3 agents" in capsys.readouterr().out
    agents = [store.agents.get(a) for a in AGENTS]
    assert sum(a.scope_count for a in agents) == 30 + 4 + 3 + 2
    assert 250 <= sum(a.observation_count for a in agents) <= 400

    scopes = scope_list(store=store, agent_id="support-assistant", limit=200).items
    shards = [s for s in scopes if s.is_shard]
    assert {s.name for s in shards} == {"product-feedback", "known-issues"}
    assert all(s.extraction_prompt for s in shards)

    user = next(s for s in scopes if s.scope_type == "individual" and s.user_id != "user-gene")
    assert user.consolidation_version == 2 and user.pending_count == 2
    assert [v.version for v in consolidation_history(store=store, scope=user).items] == [2, 1]
    observation = observation_list(store=store, scope=user, limit=1).items[0]
    assert observation.source_session_id and observation.source_message_ids
    assert observation.related_user_ids == [user.user_id]
    pending_total = sum(a.pending_count for a in agents)
    assert pending_total == sum(
        s.pending_count
        for a in AGENTS
        for s in scope_list(store=store, agent_id=a, limit=200).items
    )

    # Every observation cites messages that exist in its session (one seed for every check:
    # seeding takes most of this test's time).
    cited_sessions: set[tuple[str, str]] = set()
    for agent_id in AGENTS:
        for scope in scope_list(store=store, agent_id=agent_id, limit=200).items:
            for observation in observation_list(store=store, scope=scope, limit=100).items:
                said = store.session_samples.latest_messages(
                    agent_id, observation.source_session_id, limit=50
                )
                assert set(observation.source_message_ids) <= {m.message_id for m in said}
                cited_sessions.add((agent_id, observation.source_session_id))
    assert len(cited_sessions) > 100

    # Group sessions have several speakers, each message filed under who said it.
    group = next(s for s in scopes if s.scope_type == "group")
    cited = observation_list(store=store, scope=group, limit=1).items[0]
    said = store.session_samples.latest_messages(group.agent_id, cited.source_session_id, limit=50)
    assert len({m.user_id for m in said if m.role == "user"}) >= 2
    assert all(m.user_name for m in said if m.role == "user")
    assert recent_sessions(store=store, agent_id="support-assistant")  # a dry run has sessions

    # Chat calls went through the proxy's path: context from the seeded memory, a call
    # record, the ingest, and the formation of the turn by the offline extractor.
    calls = chat_session_page(
        store=store,
        agent_id="support-assistant",
        session_id="chat-user-gene-1",
        cursor=None,
        limit=5,
    ).items
    assert len(calls) == 1 and calls[0]["memory"] == "injected"
    assert "Business plan" in calls[0]["user_message"]
    gene = next(s for s in scopes if s.user_id == "user-gene")
    from_chat = [
        o
        for o in observation_list(store=store, scope=gene, limit=100).items
        if o.source_session_id == "chat-user-gene-1"
    ]
    assert from_chat and "Business plan" in from_chat[0].content

    # A correction rebuilt a consolidation; every job the seed ran succeeded.
    rebuilds = job_list(store=store, kind="rebuild", limit=10).items
    assert [j.status for j in rebuilds] == ["succeeded"]
    assert rebuilds[0].scope_id == gene.id
    for kind in ("formation", "chat_ingest", "rebuild"):
        assert job_list(store=store, kind=kind, limit=1).items, kind
    assert not job_list(store=store, status="failed", limit=1).items
    assert not job_list(store=store, status="queued", limit=1).items

    # The review queue has work to show: an instruction and a phone number an agent's key
    # wrote into the collective wait for a person, each with its detector's flag.
    held = review_queue(store=store, agent_id=AGENTS[0]).items
    assert {tuple(o.flags) for o in held} == {("instruction",), ("pii:phone",)}
    assert len({o.scope_id for o in held}) == 1  # both in the collective

    # A prompt check is saved, and the prompt in effect passes it.
    [comparison] = checks_run(store=store, llm=OfflineProvider(), agent_id=PROMPT_CHECK["agent_id"])
    assert comparison.check.name == PROMPT_CHECK["name"]
    assert comparison.current.passed, comparison.current.failures

    # The dashboard chart reads daily counters: the seed writes them, day by day, as
    # formation does. It counts observations as they were formed; the one the correction
    # deleted has left the agent's count since.
    year = activity_days(store=store, agent_id=agents[0].id, last=utcnow().date(), days=366)
    assert sum(d.observations for d in year) == agents[0].observation_count + 1
    month = year[-30:]
    assert 0 < sum(d.observations for d in month) < agents[0].observation_count
    assert len({d.day for d in month if d.observations}) > 5  # spread over the weeks


def test_seed_demo_if_empty_is_idempotent(store, capsys):
    call_command("seed_demo", "--if-empty")
    before = store.agents.get(AGENTS[0]).observation_count
    call_command("seed_demo", "--if-empty")
    assert "already present" in capsys.readouterr().out
    assert store.agents.get(AGENTS[0]).observation_count == before
    with pytest.raises(SystemExit):
        call_command("seed_demo")


@pytest.mark.django_db
def test_demo_login_is_created_once_and_printed(settings, tmp_path, capsys):
    settings.MEMORY_DATA_DIR = tmp_path
    call_command("ensure_demo_login")
    password = capsys.readouterr().out.strip().rsplit(" ", 1)[-1]
    call_command("ensure_demo_login", url="http://127.0.0.1:8765/")
    printed = capsys.readouterr().out.strip()
    assert printed.startswith("Log in at http://127.0.0.1:8765/ ")  # where `make run` serves
    assert printed.endswith(password)
    admin = authenticate(username="admin", password=password)
    assert admin is not None and admin.groups.filter(name="admin").exists()
    assert authenticate(username="viewer", password=password).groups.get().name == "viewer"
