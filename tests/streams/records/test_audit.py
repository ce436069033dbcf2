"""The audit log: recording, filters, bounded paging newest first."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streams.core.documents import utcnow
from streams.core.exceptions import InvalidInput
from streams.records.audit import audit_page, audit_record, content_digest
from streams.store import MemoryStore


def _record(store: MemoryStore, *, actor: str = "api:k", action: str = "scope.update", **kw):
    audit_record(
        store=store,
        actor=actor,
        action=action,
        object_type=action.split(".")[0],
        object_id=kw.pop("object_id", "o1"),
        **kw,
    )


def test_an_entry_keeps_who_what_and_the_summary(store: MemoryStore) -> None:
    audit_record(
        store=store,
        actor="ui:alice",
        action="observation.delete",
        object_type="observation",
        object_id="abc",
        agent_id="a1",
        summary={"content": content_digest("secret text")},
    )
    [entry] = audit_page(store=store).items
    assert (entry.actor, entry.action, entry.object_id, entry.agent_id) == (
        "ui:alice",
        "observation.delete",
        "abc",
        "a1",
    )
    assert entry.summary["content"]["length"] == len("secret text")
    assert "secret" not in str(entry.summary)


def test_filters_combine(store: MemoryStore) -> None:
    _record(store, actor="api:one", action="scope.update", object_id="s1")
    _record(store, actor="api:two", action="scope.update", object_id="s2")
    _record(store, actor="api:one", action="observation.create", object_id="x1")
    assert [e.object_id for e in audit_page(store=store, actor="api:one").items] == ["x1", "s1"]
    assert [e.actor for e in audit_page(store=store, action="scope.update").items] == [
        "api:two",
        "api:one",
    ]
    page = audit_page(store=store, actor="api:one", action="scope.update")
    assert [e.object_id for e in page.items] == ["s1"]
    assert audit_page(store=store, object_id="s2").items[0].actor == "api:two"
    assert audit_page(store=store, actor="nobody").items == []


def test_pages_newest_first_without_repeats(store: MemoryStore) -> None:
    for i in range(7):
        _record(store, object_id=f"o{i}")
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = audit_page(store=store, limit=3, cursor=cursor)
        seen += [e.object_id for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"o{i}" for i in reversed(range(7))]


def test_since_and_old_entries_are_reached_through_windows(store: MemoryStore) -> None:
    now = utcnow()
    _record(store, object_id="old", at=now - timedelta(days=200))
    _record(store, object_id="new", at=now)
    # The entry 200 days back lies beyond the first windows: the cursor goes on to it.
    found: list[str] = []
    cursor = None
    for _ in range(10):
        page = audit_page(store=store, actor="api:k", cursor=cursor)
        found += [e.object_id for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert found == ["new", "old"]
    recent = audit_page(store=store, since=now - timedelta(days=1))
    assert [e.object_id for e in recent.items] == ["new"]
    assert recent.next_cursor is None


def test_an_empty_log_and_bad_input(store: MemoryStore) -> None:
    assert audit_page(store=store).items == []
    with pytest.raises(InvalidInput):
        audit_page(store=store, cursor="!!not-a-cursor")
    with pytest.raises(InvalidInput):
        audit_page(store=store, actor="")
    with pytest.raises(InvalidInput):
        audit_page(store=store, limit=0)
