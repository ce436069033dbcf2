"""`manage.py recount`: counters a crash left wrong are set back to what is stored, and
counters the write path kept are already right (nothing to correct)."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from streams.records.recount import recount
from tests.streams.memory.test_speakers import form, say


def test_the_write_path_leaves_nothing_to_correct(store, fake_openai):
    say(store, "alice", [("m1", None, "I am allergic to peanuts."), ("m2", "bob", "I like tea.")])
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Alice is allergic to peanuts.", "scope": "individual:alice"}
            ]
        }
    )
    form(store)
    say(store, "alice", [("m3", None, "Still here.")])
    report = recount(store=store, min_messages=4)
    assert (report.sessions, report.sessions_changed) == (1, 0)
    assert (report.agents, report.agents_changed) == (1, 0)


def test_drifted_counters_are_repaired(store):
    say(store, "alice", [(f"m{n}", None, "hello there") for n in range(5)])
    buffer = store.sessions.get_buffer("a1", "chat")
    store.sessions.buffers.update_one(
        {"_id": buffer["_id"]}, {"$set": {"unformed_count": -2, "unformed_tokens": 1.0}}
    )
    store.agents.set_counters("a1", scopes=7, observations=26, pending=3)

    out = StringIO()
    call_command("recount", stdout=out)

    assert "1 sessions recounted (1 corrected), 1 agents recounted (1 corrected)" in out.getvalue()
    buffer = store.sessions.get_buffer("a1", "chat")
    assert buffer["unformed_count"] == 5 and buffer["formable"] is True
    assert abs(buffer["unformed_tokens"] - 5 * len("hello there") / 4.5) < 1e-6
    agent = store.agents.get("a1")
    assert (agent.scope_count, agent.observation_count, agent.pending_count) == (0, 0, 0)
