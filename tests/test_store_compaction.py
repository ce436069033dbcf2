"""Forget leaves no copy behind on disk (issue 37): after forgetting a user and compacting
the embedded store (`manage.py compact_store`), no file of the data directory holds the
user's name or words; what others have is still there, behind the same store user.

SecantusDB has no `compact`: without the rewrite, WiredTiger keeps the deleted bytes
(the figure is printed: how many files held them after forget and a checkpoint)."""

from __future__ import annotations

from pathlib import Path

from pymongo import MongoClient

from memory_admin.runtime.compaction import compact_data_dir
from memory_admin.runtime.embedded_store import embedded_server_uri, stop_embedded_server
from streams.jobs import job_execute
from streams.llm.offline import OfflineProvider
from streams.memory.formation import FormationSettings, IncomingMessage, messages_ingest
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.people.privacy import forget_user_request, forget_user_run
from streams.store import MemoryStore

AGENT = "a1"
NAME = "Zorblax Quintessa"
WORDS = "Zorblax keeps seventeen beehives near Tbilisi."
MARKERS = (b"zorblax", b"quintessa", b"beehives", b"tbilisi")


def _holding(data_dir: Path) -> list[str]:
    """The data directory's files that hold any of the user's strings (any case)."""
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            data = path.read_bytes().lower()
            if any(m in data for m in MARKERS):
                found.append(str(path.relative_to(data_dir)))
    return found


def _world(store: MemoryStore) -> None:
    store.ensure_indexes()
    own, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-z"), display_name=NAME
    )
    observation_add(store=store, scope=own, content=WORDS)
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"))
    observation_add(
        store=store, scope=group, content="Zorblax brings honey.", related_user_ids=["u-z"]
    )
    ada, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u-ada"))
    observation_add(store=store, scope=ada, content="Ada likes coffee.")
    messages_ingest(
        store=store,
        agent_id=AGENT,
        session_id="s-1",
        user_id="u-z",
        user_name=NAME,
        groups=[],
        messages=[IncomingMessage(id="m-1", role="user", content=WORDS)],
        settings=FormationSettings(),
    )


def test_after_forget_and_compaction_no_data_file_holds_the_users_strings(
    tmp_path: Path, capsys
) -> None:
    data_dir = tmp_path / "var"
    uri = embedded_server_uri(data_dir=data_dir)
    try:
        with MongoClient(uri, tz_aware=True) as client:
            store = MemoryStore(client, "memory")
            _world(store)
            job = forget_user_request(store=store, agent_id=AGENT, user_id="u-z", actor="t")
            job_execute(
                store=store,
                job_id=job.id,
                llm=OfflineProvider(),
                work=lambda run: forget_user_run(store=store, run=run),
            )
            client.admin.command("fsync")  # a checkpoint: what a later scan would meet
        left = _holding(data_dir)
        with capsys.disabled():
            print(f"\nafter forget and a checkpoint, {len(left)} file(s) held them: {left}")

        outcome = compact_data_dir(data_dir=data_dir)

        assert _holding(data_dir) == []
        assert outcome["copied"]["memory.memory_observations"] == 1  # Ada's
        uri = embedded_server_uri(data_dir=data_dir)  # restarted with --auth, same user
        with MongoClient(uri, tz_aware=True) as client:
            store = MemoryStore(client, "memory")
            ada = store.scopes.find_by_identity(
                agent_id=AGENT, scope_type="individual", user_id="u-ada", group_id=None, name=None
            )
            assert ada is not None and ada.observation_count == 1
            assert store.tombstones.covered(agent_id=AGENT, user_ids=["u-z"]) == {"u-z"}
            names = {i["name"] for i in client["memory"]["memory_scopes"].list_indexes()}
            assert len(names) > 1  # the indexes came along
    finally:
        stop_embedded_server(data_dir=data_dir)
