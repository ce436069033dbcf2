"""Several people in one session: each line names its speaker, each memory goes to the
person it is about, and forgetting one person leaves nothing of theirs and all of the rest.

Each person's words carry a word only they use (a "secret"), so a scan of every memory
document proves where their content went, and that it is gone after forgetting them.
"""

from __future__ import annotations

from typing import Any

from memory_admin.jobs.tasks import formation_settings
from streams.jobs import job_get
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.store import MemoryStore
from tests.streams.people.test_privacy import AGENT, every_memory_document, forget
from tests.task_mode import run_job, settle

EDEN = {"id": "g-eden", "name": "Eden"}
OPS = {"id": "g-ops", "name": "Ops"}
SECRETS = {"alice": "peanuts", "bob": "oolong", "carol": "kayak"}


def say(store: MemoryStore, request_user: str, lines: list[tuple[str, str | None, str]], **kw):
    """One ingest request: (message id, speaker or None for the request's user, content)."""
    return messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id=kw.pop("session", "chat"),
        user_id=request_user,
        user_name=request_user.title(),
        groups=kw.pop("groups", []),
        messages=[
            IncomingMessage(
                id=mid,
                role="user",
                content=text,
                user_id=speaker,
                user_name=speaker.title() if speaker else None,
            )
            for mid, speaker, text in lines
        ],
        settings=formation_settings(),
    )


def form(store: MemoryStore, session: str = "chat", agent: str = AGENT) -> Any:
    job = formation_request(store=store, agent_id=agent, session_id=session, trigger="api")
    run = run_job(
        store=store,
        job_id=job.id,
        work=lambda r: formation_run(store=store, run=r, settings=formation_settings()),
    )
    settle(store)
    done = job_get(store=store, job_id=job.id)
    assert done.status == "succeeded", done.error
    return run


def observations(store: MemoryStore, key: ScopeKey) -> list[tuple[str, list[str]]]:
    scope, _ = scope_get_or_create(store=store, key=key)
    items = observation_list(store=store, scope=scope).items
    return sorted((o.content, o.related_user_ids) for o in items)


def individual(user: str) -> ScopeKey:
    return ScopeKey.individual(AGENT, user)


def test_two_speakers_with_groups_then_forget_one(store, fake_openai):
    say(store, "alice", [("m1", None, "I am allergic to peanuts.")], groups=[EDEN])
    say(store, "bob", [("m2", None, "I only drink oolong tea.")], groups=[EDEN, OPS])
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Alice is allergic to peanuts.", "scope": "individual:alice"},
                {"content": "Bob only drinks oolong tea.", "scope": "individual:bob"},
                {"content": "Eden orders no peanuts.", "scope": "group:Eden", "about": ["alice"]},
                {"content": "Ops stocks oolong.", "scope": "group:Ops", "about": ["bob"]},
                {"content": "Someone said something.", "scope": "individual"},
            ]
        },
        strict=False,  # a server that does not enforce the schema: the parser drops it
    )
    run = form(store)

    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    assert "[m1] Alice (alice): I am allergic to peanuts." in prompt
    assert "[m2] Bob (bob): I only drink oolong tea." in prompt
    assert "- Eden" in prompt and "- Ops" in prompt  # the groups of both speakers
    # Plain "individual" is ambiguous with two people: dropped, not credited to either.
    assert run.result["observations"] == 4 and run.result["dropped"] == 1
    assert observations(store, individual("alice")) == [
        ("Alice is allergic to peanuts.", ["alice"])
    ]
    assert observations(store, individual("bob")) == [("Bob only drinks oolong tea.", ["bob"])]
    assert observations(store, ScopeKey.group(AGENT, "g-eden")) == [
        ("Eden orders no peanuts.", ["alice"])
    ]
    assert observations(store, ScopeKey.group(AGENT, "g-ops")) == [("Ops stocks oolong.", ["bob"])]

    say(store, "alice", [("m3", None, "More about peanuts tomorrow.")], groups=[EDEN])
    say(store, "bob", [("m4", None, "Still oolong for me.")], groups=[EDEN, OPS])
    receipt = forget(store, "alice")

    assert receipt["deleted"]["memory_messages"] == 2
    everything = every_memory_document(store)
    assert "peanuts" not in everything and "Alice".lower() not in everything.replace(
        '"user_id": "alice"', ""
    )
    assert observations(store, individual("bob")) == [("Bob only drinks oolong tea.", ["bob"])]
    assert observations(store, ScopeKey.group(AGENT, "g-ops")) == [("Ops stocks oolong.", ["bob"])]
    assert observations(store, ScopeKey.group(AGENT, "g-eden")) == []
    buffer = store.sessions.get_buffer(AGENT, "chat")
    assert buffer["speaker_ids"] == ["bob"] and buffer["user_id"] == "bob"
    assert "user_name" not in buffer or buffer["user_name"] != "Alice"
    assert (buffer["unformed_count"], round(buffer["unformed_tokens"], 3)) == (
        1,
        round(len("Still oolong for me.") / 4.5, 3),
    )


def test_three_speakers_in_one_request_then_forget_one(store, fake_openai):
    say(
        store,
        "carol",
        [
            ("m1", "alice", "I am allergic to peanuts."),
            ("m2", "bob", "I only drink oolong tea."),
            ("m3", None, "I paddle a kayak on weekends."),
        ],
        groups=[EDEN],
    )
    fake_openai.reply_json(
        {
            "observations": [
                {"content": "Alice is allergic to peanuts.", "scope": "individual:alice"},
                {"content": "Bob only drinks oolong tea.", "scope": "individual:BOB"},
                {"content": "Carol paddles a kayak.", "scope": "individual:carol"},
                {"content": "Eden has a tea lover (oolong).", "scope": "group:Eden"},
                {"content": "Bob told Alice about oolong.", "scope": "individual:alice",
                 "about": ["bob", "stranger"]},
            ]
        },
        strict=False,  # outside the schema on purpose: the parser's own checks
    )  # fmt: skip
    form(store)

    prompt = fake_openai.chat_requests[-1].body["messages"][-1]["content"]
    for user, secret in SECRETS.items():
        assert f"{user.title()} ({user}): " in prompt and secret in prompt
    # Unattributed group memory is about everyone who spoke: forgetting any of them removes it.
    assert observations(store, ScopeKey.group(AGENT, "g-eden")) == [
        ("Eden has a tea lover (oolong).", ["alice", "bob", "carol"])
    ]
    assert observations(store, individual("alice")) == [
        ("Alice is allergic to peanuts.", ["alice"]),
        ("Bob told Alice about oolong.", ["alice", "bob"]),  # "stranger" did not speak
    ]
    scope, _ = scope_get_or_create(store=store, key=individual("carol"))
    assert scope.groups and scope.groups[0]["id"] == "g-eden"

    forget(store, "bob")

    assert "oolong" not in every_memory_document(store)
    assert observations(store, individual("alice")) == [
        ("Alice is allergic to peanuts.", ["alice"])
    ]
    assert observations(store, individual("carol")) == [("Carol paddles a kayak.", ["carol"])]
    assert observations(store, individual("bob")) == []
    assert store.db["memory_messages"].count_documents({"agent_id": AGENT, "user_id": "bob"}) == 0
    assert store.db["memory_messages"].count_documents({"agent_id": AGENT}) == 2


def test_a_speaker_with_a_memory_is_remembered_in_the_session_groups(store, fake_openai):
    """A user whose individual memory exists, speaking in a group session that files
    nothing about them personally, is still remembered as a member of its groups (the
    Users page and the export list them; propagation targets them)."""
    dana, _ = scope_get_or_create(store=store, key=individual("dana"), display_name="Dana")
    assert dana.groups == []
    say(store, "dana", [("m1", None, "Our team ships on Fridays.")], groups=[EDEN], session="g")
    fake_openai.reply_json(
        {"observations": [{"content": "Eden ships on Fridays.", "scope": "group:Eden"}]}
    )
    form(store, session="g")
    assert observations(store, individual("dana")) == []
    fresh, _ = scope_get_or_create(store=store, key=individual("dana"))
    assert fresh.groups == [EDEN]
    never, _ = scope_get_or_create(store=store, key=individual("erin"))  # did not speak
    assert never.groups == []
