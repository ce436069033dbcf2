"""The rules that decide or remove: review decisions, delete, observation edit, private,
bulk, forget (and lifting its tombstone), expiry."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    rule,
)

from tests.every_path.machine import (
    MachineBase,
    enabled,
    kinds,
    picks,
    scope_types,
    users,
)
from tests.every_path.surfaces import deliver_webhooks


class RemovalRules(MachineBase):
    @rule(
        approve=st.booleans(),
        edit=st.sampled_from([None, "plain", "secret", "email"]),
        bulk=st.booleans(),
        pick=picks,
    )
    @enabled("review")
    def review(self, approve: bool, edit: str | None, bulk: bool, pick: int) -> None:
        status, queue = self.http.read(f"/agents/{self.agent}/review", {"limit": 200})
        assert status == 200, queue
        waiting = {o["id"] for o in queue["items"]}
        entry = self.pick(
            pick, where=lambda e: e.observation_id in waiting or self._waiting(e, queue)
        )
        if entry is None:
            return
        self.begin("review", entry.scope_type)
        oid = entry.observation_id or self._waiting(entry, queue)
        decision = "approve" if approve else "reject"
        if bulk:
            status, answer = self.http.write(
                "post",
                f"/agents/{self.agent}/review/decisions",
                {"ids": [oid], "decision": decision},
            )
            assert status == 200, answer
        else:
            body: dict[str, Any] = {"decision": decision}
            new = self.text(edit, entry.scope_type) if (approve and edit) else None
            if new is not None:
                body["content"] = new.content
            status, answer = self.http.write("post", f"/observations/{oid}/review", body)
            assert status in (200, 422), answer
            if new is not None and status == 200:
                entry.edited = True  # its earlier text stays in the history (by design)
                self.record(
                    new,
                    what="observation",
                    scope_type=entry.scope_type,
                    scope_id=entry.scope_id,
                    owner=entry.owner,
                    acked=True,
                    rule_name="review edit",
                    observation_id=oid,
                    approved=True,  # the person who approved it wrote it
                )
                return
        entry.observation_id = oid
        if approve:
            entry.approved = True
        else:
            entry.rejected = True

    @rule(pick=picks)
    @enabled("review_undo")
    def review_undo(self, pick: int) -> None:
        """Undo a decision (within MEMORY_REVIEW_UNDO_SECONDS): the item waits again, so
        an undone approval's flagged text must leave every shared surface at once."""
        entry = self.pick(
            pick, where=lambda e: (e.approved or e.rejected) and e.observation_id is not None
        )
        if entry is None:
            return
        self.begin("review_undo", entry.scope_type)
        status, answer = self.http.write(
            "post", f"/observations/{entry.observation_id}/review/undo"
        )
        if status == 409:  # consolidated since, approved with an edit, or undone already
            assert answer["error"]["code"] == "undo_unavailable", answer
            return
        assert status == 200, answer
        assert answer["status"] in ("in_review", "candidate"), answer
        entry.approved = entry.rejected = False

    @rule(pick=picks)
    @enabled("delete")
    def delete(self, pick: int) -> None:
        entry = self.pick(pick)
        if entry is None or self.observation_id(entry) is None:
            return
        self.begin("delete", entry.scope_type)
        status, answer = self.http.write("delete", f"/observations/{entry.observation_id}")
        assert status == 204, answer
        entry.removed_at, entry.removed_by = self.step, "delete"

    @rule(pick=picks, kind=kinds)
    @enabled("edit")
    def edit(self, pick: int, kind: str) -> None:
        """An observation edit: the old text is gone (unless the new one waits for review)."""
        entry = self.pick(pick)
        if entry is None or self.observation_id(entry) is None:
            return
        self.begin("edit", entry.scope_type)
        new = self.text(kind, entry.scope_type)
        status, answer = self.http.write(
            "patch", f"/observations/{entry.observation_id}", {"content": new.content}
        )
        assert status in (200, 202, 422), answer
        if status == 200 and new.marker in (answer or {}).get("content", ""):
            entry.edited = True  # its earlier text stays in the history (by design)
            self.record(
                new,
                what="observation",
                scope_type=entry.scope_type,
                scope_id=entry.scope_id,
                owner=entry.owner,
                acked=True,
                rule_name="edit",
                observation_id=entry.observation_id,
            )

    @rule(pick=picks)
    @enabled("private")
    def private(self, pick: int) -> None:
        entry = self.pick(pick)
        if entry is None or self.observation_id(entry) is None:
            return
        self.begin("private", entry.scope_type)
        status, answer = self.http.write(
            "patch", f"/observations/{entry.observation_id}", {"private": True}
        )
        assert status == 200, answer
        entry.private = True

    @rule(pick=picks, action=st.sampled_from(["delete", "private"]))
    @enabled("bulk")
    def bulk(self, pick: int, action: str) -> None:
        entry = self.pick(pick)
        if entry is None:
            return
        self.begin("bulk", entry.scope_type)
        body = {
            "filter": {"scope_id": entry.scope_id, "q": entry.text.marker, "status": "all"},
            "action": action,
            "dry_run": False,
        }
        status, answer = self.http.write("post", f"/agents/{self.agent}/observations/bulk", body)
        assert status == 200, answer
        if answer["matched"] and action == "delete":
            entry.removed_at, entry.removed_by = self.step, "bulk delete"
        elif answer["matched"]:
            entry.private = True
        if answer["job_id"]:
            self.bulk_jobs.append((answer["job_id"], action, entry, self.step))

    @rule(pick=picks)
    @enabled("bulk_undo")
    def bulk_undo(self, pick: int) -> None:
        """A bulk delete or mark-private taken back (its window is 15 minutes: always open
        here): a deleted text is back, once, through the screen (held for review again
        where the scope's rules hold it), unless its user was forgotten since (the forget
        purged it); a second undo of the same job is a 409."""
        if not self.bulk_jobs:
            return
        job_id, action, entry, step = self.bulk_jobs[pick % len(self.bulk_jobs)]
        self.begin("bulk_undo", entry.scope_type)
        status, answer = self.http.write("post", f"/bulk/{job_id}/undo")
        assert status in (202, 409), answer
        if status == 409:
            assert answer["error"]["code"] == "undo_unavailable", answer
            return
        if action == "delete":
            restored = (entry.removed_at, entry.removed_by) == (step, "bulk delete")
            if restored and entry.forgotten_at is None:
                entry.removed_at = entry.removed_by = None
                entry.observation_id = entry.client_id = None  # a new observation
                entry.approved = False  # screened again
                entry.superseded_at = None
        elif entry.private and entry.removed_at is None and entry.forgotten_at is None:
            entry.private = False

    @rule(user=users)
    @enabled("forget")
    def forget(self, user: str) -> None:
        self.begin("forget", "individual")
        status, answer = self.http.write("delete", f"/agents/{self.agent}/users/{user}")
        assert status == 202, answer
        self.forgotten[user] = self.step
        for e in self.entries:
            if (e.owner == user or user in e.about) and e.forgotten_at is None:
                e.forgotten_at = self.step

    @rule(user=users)
    @enabled("lift_tombstone")
    def lift_tombstone(self, user: str) -> None:
        """Wave 4 adds `DELETE /agents/{agent}/tombstones/{user}`; before it, 404."""
        if user not in self.forgotten:
            return
        self.begin("lift_tombstone", "individual")
        status, answer = self.http.write(
            "delete", f"/agents/{self.agent}/tombstones/{user}", {"reason": "the user came back"}
        )
        assert status in (200, 204, 404), answer
        if status in (200, 204):
            del self.forgotten[user]

    @rule(scope_type=scope_types, kind=kinds, user=users)
    @enabled("expiry")
    def expiry(self, scope_type: str, kind: str, user: str) -> None:
        """An add that expires at once, then the lifecycle sweep (which rebuilds)."""
        sid = self.target(scope_type, user)
        if sid is None:
            return
        self.begin("expiry", scope_type)
        text = self.text(kind, scope_type)
        expires = datetime.now(UTC) + timedelta(seconds=0.4)
        status, answer = self.http.write(
            "post",
            f"/scopes/{sid}/observations",
            {"content": text.content, "expires_at": expires.isoformat()},
        )
        assert status in (200, 201, 422), answer
        entry = self.record(
            text,
            what="observation",
            scope_type=scope_type,
            scope_id=sid,
            owner=user if scope_type == "individual" else None,
            acked=status in (200, 201),
            rule_name="expiry",
        )
        deliver_webhooks(self.receiver, step=self.step - 0.5)  # its creation, before it expired
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
        from memory_admin.jobs.tasks import lifecycle_sweep

        with self.http.tasks():
            lifecycle_sweep()
        entry.removed_at, entry.removed_by = self.step, "expiry"
