"""A test that walks every path (issue 37, 9): a Hypothesis state machine over the public
API with a rule for every write action, on all four scope types, writing texts that carry
emails, phones, IBANs, secrets, instructions and unique markers. After each step it reads
every surface (API answers, exports, UI pages, webhook bodies) and checks the four
invariants of `tests/every_path/invariants.py`.

CI runs it derandomized with a small budget; `make every-path` (or
MEMORY_EVERY_PATH_EXAMPLES / MEMORY_EVERY_PATH_STEPS) runs it longer. It prints the
rules fired per scope type. MEMORY_EVERY_PATH_INVARIANTS (comma-separated names) checks
only some invariants, MEMORY_EVERY_PATH_RULES only lets some rules fire: both are for
finding one shrunk counterexample per invariant (docs/every-path.md).
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memory_admin.models import ApiKey
from tests.api.conftest import bearer_client
from tests.every_path.invariants import INVARIANTS
from tests.every_path.ledger import Entry, Snapshot
from tests.every_path.surfaces import collect, scope_kind
from tests.every_path.texts import KINDS, Text, make_text
from tests.every_path.world import GROUP_ID, GROUP_NAME, SHARD, USERS, Http, Receiver, copying_model
from tests.ui.people import create_user

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("MEMORY_EVERY_PATH_EXAMPLES", "4"))
STEPS = int(os.environ.get("MEMORY_EVERY_PATH_STEPS", "10"))
ONLY_INVARIANTS = {n for n in os.environ.get("MEMORY_EVERY_PATH_INVARIANTS", "").split(",") if n}
ONLY_RULES = {n for n in os.environ.get("MEMORY_EVERY_PATH_RULES", "").split(",") if n}
SCOPE_TYPES = ("individual", "group", "collective", "shard")
scope_types = st.sampled_from(SCOPE_TYPES)
kinds = st.sampled_from(KINDS)
users = st.sampled_from(sorted(USERS))
picks = st.integers(min_value=0, max_value=63)
COVERAGE: Counter[tuple[str, str]] = Counter()  # (rule, scope type) -> times fired


def enabled(name: str) -> Any:
    return precondition(lambda self: not ONLY_RULES or name in ONLY_RULES)


class EveryPath(RuleBasedStateMachine):
    """One agent per example; the ledger says what was written and what became of it."""

    http: Http
    receiver: Receiver

    def __init__(self) -> None:
        super().__init__()
        self.tag = uuid.uuid4().hex[:2]
        self.agent = f"every-{uuid.uuid4().hex[:10]}"
        self.entries: list[Entry] = []
        self.exports: list[dict[str, Any]] = []
        self.forgotten: dict[str, int] = {}
        self.step = 0
        self.serial = 0
        self.session = 0
        self.snapshot: Snapshot | None = None
        self.scopes: dict[tuple[str, str | None], str] = {}

    # -- helpers -------------------------------------------------------------------------
    def text(self, kind: str, scope_type: str) -> Text:
        self.serial += 1
        return make_text(serial=self.serial, kind=kind, scope_type=scope_type, tag=self.tag)

    def begin(self, rule_name: str, scope_type: str) -> None:
        self.step += 1
        COVERAGE[(rule_name, scope_type)] += 1

    def refresh_scopes(self) -> None:
        status, page = self.http.read(f"/agents/{self.agent}/scopes", {"limit": 200})
        assert status == 200, page
        self.scopes = {}
        for scope in page["items"]:
            self.scopes[(scope_kind(scope), scope.get("user_id"))] = scope["id"]

    def scope_id(self, scope_type: str, user: str) -> str | None:
        self.refresh_scopes()
        return self.scopes.get((scope_type, user if scope_type == "individual" else None))

    def record(
        self,
        text: Text,
        *,
        what: str,
        scope_type: str,
        scope_id: str,
        owner: str | None,
        acked: bool,
        rule_name: str,
        **extra: Any,
    ) -> Entry:
        entry = Entry(
            text=text,
            what=what,
            scope_type=scope_type,
            scope_id=scope_id,
            owner=owner,
            acked=acked,
            step=self.step,
            rule=rule_name,
            **extra,
        )
        if owner in self.forgotten:  # a write for a forgotten user must store nothing
            entry.forgotten_at = self.step
        self.entries.append(entry)
        return entry

    def pick(self, index: int, *, where: Any = None) -> Entry | None:
        chosen = [e for e in self.entries if e.live_observation and (where is None or where(e))]
        return chosen[index % len(chosen)] if chosen else None

    def ingest(self, texts: list[Text], *, user: str, rule_name: str) -> tuple[int, Any]:
        self.session += 1
        session = f"s{self.session}"
        messages = [
            {"id": f"m{self.session}-{n}", "role": "user", "content": t.content}
            for n, t in enumerate(texts)
        ]
        body = {
            "user_id": user,
            "user_name": USERS[user],
            "groups": [{"id": GROUP_ID, "name": GROUP_NAME}],
            "messages": messages,
        }
        status, answer = self.http.write(
            "post", f"/agents/{self.agent}/sessions/{session}/messages", body
        )
        assert status == 202, answer
        status, answer = self.http.write("post", f"/agents/{self.agent}/sessions/{session}/form")
        if status == 409 and answer["error"]["code"] == "conflict":
            return status, answer  # formed at once (an explicit "remember")
        assert status == 202, answer
        return status, answer

    # -- set-up: the four scope types, a webhook for every event -------------------------------
    @initialize()
    def setup(self) -> None:
        hook = {
            "url": self.receiver.url,
            "events": [
                "observation.created",
                "observation.updated",
                "observation.deleted",
                "consolidation.version",
                "review.waiting",
                "user.forgotten",
            ],
        }
        status, answer = self.http.write("post", f"/agents/{self.agent}/webhooks", hook)
        assert status == 201, answer
        status, answer = self.http.write(
            "post", f"/agents/{self.agent}/scopes", {"scope_type": "collective", "name": SHARD}
        )
        assert status == 201, answer
        for user in sorted(USERS):
            texts = [self.text("plain", t) for t in SCOPE_TYPES]
            self.ingest(texts, user=user, rule_name="setup")
            self.refresh_scopes()
            for t, scope_type in zip(texts, SCOPE_TYPES, strict=True):
                self.record(
                    t,
                    what="observation",
                    scope_type=scope_type,
                    scope_id=self.scopes[
                        (scope_type, user if scope_type == "individual" else None)
                    ],
                    owner=user,
                    acked=True,
                    rule_name="setup",
                )

    # -- the write rules ------------------------------------------------------------------------
    @rule(scope_type=scope_types, kind=kinds, user=users)
    @enabled("ingest_and_form")
    def ingest_and_form(self, scope_type: str, kind: str, user: str) -> None:
        self.begin("ingest_and_form", scope_type)
        text = self.text(kind, scope_type)
        self.ingest([text], user=user, rule_name="ingest_and_form")
        sid = self.scope_id(scope_type, user) or "?"
        self.record(
            text,
            what="observation",
            scope_type=scope_type,
            scope_id=sid,
            owner=user,
            acked=True,
            rule_name="ingest_and_form",
        )

    @rule(scope_type=scope_types, kind=kinds, user=users, private=st.booleans())
    @enabled("add")
    def add(self, scope_type: str, kind: str, user: str, private: bool) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        self.begin("add", scope_type)
        text = self.text(kind, scope_type)
        client_id = f"c-{text.marker}"
        status, answer = self.http.write(
            "post",
            f"/scopes/{sid}/observations",
            {"content": text.content, "private": private, "client_id": client_id},
        )
        assert status in (200, 201, 422), answer
        self.record(
            text,
            what="observation",
            scope_type=scope_type,
            scope_id=sid,
            owner=user if scope_type == "individual" else None,
            acked=status in (200, 201),
            rule_name="add",
            client_id=client_id,
            private=private,
            observation_id=answer.get("id") if status in (200, 201) else None,
        )

    @rule(pick=picks, same=st.booleans())
    @enabled("add_again")
    def add_again(self, pick: int, same: bool) -> None:
        """A repeated single add with the same `client_id`: the same content answers the
        first observation; other content is 409 `client_id_reused` (200 before wave 4)."""
        entry = self.pick(pick, where=lambda e: e.client_id is not None)
        if entry is None:
            return
        self.begin("add_again", entry.scope_type)
        other = self.text("plain", entry.scope_type)
        content = entry.text.content if same else other.content
        status, answer = self.http.write(
            "post",
            f"/scopes/{entry.scope_id}/observations",
            {"content": content, "client_id": entry.client_id},
        )
        if same or status != 409:
            assert status == 200 and answer["id"] == entry.observation_id, (status, answer)
        if not same:
            self.record(
                other,
                what="observation",
                scope_type=entry.scope_type,
                scope_id=entry.scope_id,
                owner=entry.owner,
                acked=False,
                rule_name="add_again",
            )

    @rule(scope_type=scope_types, batch=st.lists(kinds, min_size=1, max_size=3), user=users)
    @enabled("batch")
    def batch(self, scope_type: str, batch: list[str], user: str) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        self.begin("batch", scope_type)
        texts = [self.text(k, scope_type) for k in batch]
        items = [{"content": t.content, "client_id": f"b-{t.marker}"} for t in texts]
        status, answer = self.http.write("post", f"/scopes/{sid}/observations", {"items": items})
        assert status in (200, 201, 422), answer
        results = answer.get("items", []) if status in (200, 201) else []
        for n, t in enumerate(texts):
            item = results[n] if n < len(results) else {}
            acked = bool(item.get("id")) and not item.get("error")
            self.record(
                t,
                what="observation",
                scope_type=scope_type,
                scope_id=sid,
                owner=user if scope_type == "individual" else None,
                acked=acked,
                rule_name="batch",
                observation_id=item.get("id"),
            )

    @rule(pick=picks, into=scope_types, user=users)
    @enabled("move")
    def move(self, pick: int, into: str, user: str) -> None:
        target = into
        entry = self.pick(pick)
        target_id = self.scope_id(target, user)
        if entry is None or target_id is None or target_id == entry.scope_id:
            return
        self.begin("move", target)
        body = {
            "filter": {"scope_id": entry.scope_id, "q": entry.text.marker, "status": "all"},
            "action": "move",
            "target_scope_id": target_id,
            "dry_run": False,
        }
        status, answer = self.http.write("post", f"/agents/{self.agent}/observations/bulk", body)
        assert status == 200, answer
        if answer["matched"]:
            entry.scope_type, entry.scope_id = target, target_id
            if target != "individual":
                entry.owner = entry.owner if entry.rule == "ingest_and_form" else None
            entry.approved = False  # a move is a new write into the target

    @rule(scope_type=scope_types, kind=kinds, user=users)
    @enabled("pin")
    def pin(self, scope_type: str, kind: str, user: str) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        self.begin("pin", scope_type)
        text = self.text(kind, scope_type)
        status, answer = self.http.write("put", f"/scopes/{sid}/pins", {"pins": [text.content]})
        assert status in (200, 422), answer
        if status == 200:
            for e in self.entries:
                if e.what == "pin" and e.scope_id == sid:
                    e.replaced = True
        self.record(
            text,
            what="pin",
            scope_type=scope_type,
            scope_id=sid,
            owner=user if scope_type == "individual" else None,
            acked=status == 200,
            rule_name="pin",
        )

    @rule(scope_type=scope_types, kind=kinds, user=users)
    @enabled("hand_edit")
    def hand_edit(self, scope_type: str, kind: str, user: str) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        self.begin("hand_edit", scope_type)
        status, scope = self.http.read(f"/scopes/{sid}")
        text = self.text(kind, scope_type)
        body = {
            "consolidation": f"{scope['consolidation'] or ''} {text.content}".strip(),
            "expected_version": scope["consolidation_version"],
        }
        status, answer = self.http.write("patch", f"/scopes/{sid}", body)
        assert status in (200, 422), answer
        self.record(
            text,
            what="edit",
            scope_type=scope_type,
            scope_id=sid,
            owner=user if scope_type == "individual" else None,
            acked=status == 200,
            rule_name="hand_edit",
        )

    @rule(scope_type=scope_types, user=users)
    @enabled("consolidate")
    def consolidate(self, scope_type: str, user: str) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        self.begin("consolidate", scope_type)
        status, answer = self.http.write("post", f"/scopes/{sid}/consolidate")
        assert status in (202, 409), answer

    @rule(scope_type=scope_types, user=users, back=picks)
    @enabled("restore")
    def restore(self, scope_type: str, user: str, back: int) -> None:
        sid = self.scope_id(scope_type, user)
        if sid is None:
            return
        status, scope = self.http.read(f"/scopes/{sid}")
        if scope["consolidation_version"] < 1:
            return
        self.begin("restore", scope_type)
        version = 1 + back % scope["consolidation_version"]
        status, answer = self.http.write("post", f"/scopes/{sid}/consolidations/{version}/restore")
        assert status in (200, 201, 202, 409, 422), answer

    @rule(scope_type=scope_types, user=users, whole_user=st.booleans())
    @enabled("export")
    def export(self, scope_type: str, user: str, whole_user: bool) -> None:
        self.begin("export", "individual" if whole_user else scope_type)
        if whole_user:
            status, doc = self.http.read(
                f"/agents/{self.agent}/users/{user}/export", {"format": "json"}
            )
        else:
            sid = self.scope_id(scope_type, user)
            if sid is None:
                return
            status, doc = self.http.read(f"/scopes/{sid}/export", {"format": "json"})
        assert status == 200, doc
        self.exports.append(doc)

    @rule(pick=picks, kind=kinds, claimed=st.sampled_from(["pending", "consolidated"]))
    @enabled("import_")
    def import_(self, pick: int, kind: str, claimed: str) -> None:
        """Import a stored export back (it may be stale: made before a delete or a forget),
        with one new observation that claims a status."""
        if not self.exports:
            return
        doc = self.exports[pick % len(self.exports)]
        scope = next((s for s in doc["scopes"] if s.get("observations")), None)
        if scope is None:
            return
        kind_of = (
            "shard"
            if scope["scope_type"] == "collective" and scope.get("name")
            else scope["scope_type"]
        )
        self.begin("import", kind_of)
        text = self.text(kind, kind_of)
        new = {
            **scope["observations"][0],
            "content": text.content,
            "status": claimed,
            "flags": [],
            "review": None,
            "deleted": False,
            "digest": None,
            "id": hashlib.sha256(text.marker.encode()).hexdigest()[:24],
        }
        new.pop("digest")
        sent = {**doc, "scopes": [{**scope, "observations": [*scope["observations"], new]}]}
        status, answer = self.http.write("post", f"/agents/{self.agent}/import", sent)
        assert status in (200, 201, 422), answer
        owner = scope.get("user_id") or next(iter(new.get("related_user_ids") or []), None)
        refused = (
            {r.get("user_id") for r in (answer or {}).get("refused", [])}
            if status in (200, 201)
            else set()
        )
        acked = status in (200, 201) and (owner not in refused)
        sid = self.scope_id(kind_of, scope.get("user_id") or "u1") or scope["id"]
        self.record(
            text,
            what="observation",
            scope_type=kind_of,
            scope_id=sid,
            owner=owner,
            acked=acked,
            rule_name="import",
        )

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
                entry.removed_at, entry.removed_by = self.step, "review edit"
                self.record(
                    new,
                    what="observation",
                    scope_type=entry.scope_type,
                    scope_id=entry.scope_id,
                    owner=entry.owner,
                    acked=True,
                    rule_name="review edit",
                    observation_id=oid,
                )
                return
        entry.observation_id = oid
        if approve:
            entry.approved = True
        else:
            entry.rejected = True

    @staticmethod
    def _waiting(entry: Entry, queue: dict[str, Any]) -> str | None:
        return next((o["id"] for o in queue["items"] if entry.text.marker in o["content"]), None)

    def observation_id(self, entry: Entry) -> str | None:
        if entry.observation_id:
            return entry.observation_id
        status, page = self.http.read(
            f"/scopes/{entry.scope_id}/observations", {"status": "all", "limit": 200}
        )
        if status != 200:
            return None
        entry.observation_id = next(
            (o["id"] for o in page["items"] if entry.text.marker in o["content"]), None
        )
        return entry.observation_id

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
            entry.removed_at, entry.removed_by = self.step, "edit"
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

    @rule(user=users)
    @enabled("forget")
    def forget(self, user: str) -> None:
        self.begin("forget", "individual")
        status, answer = self.http.write("delete", f"/agents/{self.agent}/users/{user}")
        assert status == 202, answer
        self.forgotten[user] = self.step
        for e in self.entries:
            if e.owner == user and e.forgotten_at is None:
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
        sid = self.scope_id(scope_type, user)
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
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
        from memory_admin.tasks import lifecycle_sweep

        with self.http.tasks():
            lifecycle_sweep()
        entry.removed_at, entry.removed_by = self.step, "expiry"

    # -- the invariants, after every step -------------------------------------------------------
    def surfaces(self) -> Snapshot:
        if self.snapshot is None or self.snapshot.step != self.step:
            self.snapshot = collect(
                http=self.http, agent_id=self.agent, step=self.step, receiver=self.receiver
            )
        return self.snapshot

    def check(self, name: str) -> None:
        if ONLY_INVARIANTS and name not in ONLY_INVARIANTS:
            return
        broken = INVARIANTS[name](self.entries, self.surfaces())
        assert not broken, f"{name} broken:\n  " + "\n  ".join(broken)

    @invariant()
    def inv_no_live_personal_data_or_secret_in_shared_scopes(self) -> None:
        self.check("no_live_personal_data_or_secret_in_shared_scopes")

    @invariant()
    def inv_removed_marker_appears_nowhere(self) -> None:
        self.check("removed_marker_appears_nowhere")

    @invariant()
    def inv_forgotten_user_appears_nowhere(self) -> None:
        self.check("forgotten_user_appears_nowhere")

    @invariant()
    def inv_acknowledged_write_exists_once(self) -> None:
        self.check("acknowledged_write_exists_once")


def _coverage_table() -> str:
    rules = sorted({r for r, _ in COVERAGE})
    lines = [f"{'rule':<16}" + "".join(f"{t:>12}" for t in SCOPE_TYPES)]
    for r in rules:
        lines.append(f"{r:<16}" + "".join(f"{COVERAGE[(r, t)]:>12}" for t in SCOPE_TYPES))
    lines.append(
        f"{'all rules':<16}"
        + "".join(f"{sum(n for (_, t), n in COVERAGE.items() if t == s):>12}" for s in SCOPE_TYPES)
    )
    return "\n".join(lines)


def test_every_path(
    db, fake_openai, run_tasks, settings, client, django_user_model, capsys
) -> None:  # noqa: ANN001
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 2
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    fake_openai.set_responder(copying_model)
    client.force_login(create_user(django_user_model, username="every-path-admin", role="admin"))
    receiver = Receiver().start()
    EveryPath.http = Http(
        api=bearer_client(ApiKey.generate(name="every-path", agent_ids=[])[1]),
        ui=client,
        tasks=run_tasks,
    )
    EveryPath.receiver = receiver
    COVERAGE.clear()
    try:
        run_state_machine_as_test(
            EveryPath,
            settings=settings_for_run(),
        )
    finally:
        receiver.stop()
        with capsys.disabled():
            print(f"\nevery path: rules fired per scope type ({EXAMPLES} examples x {STEPS} steps)")
            print(_coverage_table())


def settings_for_run() -> hsettings:
    return hsettings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
        ],
    )
