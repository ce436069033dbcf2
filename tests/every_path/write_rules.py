"""The rules that write: ingest and form, add (and its repeat), batch, move, pin, hand
edit, consolidate, restore, export, import."""

from __future__ import annotations

import hashlib

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


class WriteRules(MachineBase):
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
        sid = self.target(scope_type, user)
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
        first observation. Other content is 409 `client_id_reused` (wave 4); a 200 is an
        acknowledgement of the new content, which must then be stored."""
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
        if same:
            assert status == 200 and answer["id"] == entry.observation_id, (status, answer)
            return
        assert status in (200, 201, 409), answer
        self.record(
            other,
            what="observation",
            scope_type=entry.scope_type,
            scope_id=entry.scope_id,
            owner=entry.owner,
            acked=status in (200, 201),
            rule_name="add_again",
        )

    @rule(scope_type=scope_types, batch=st.lists(kinds, min_size=1, max_size=3), user=users)
    @enabled("batch")
    def batch(self, scope_type: str, batch: list[str], user: str) -> None:
        sid = self.target(scope_type, user)
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
        target_id = self.target(target, user)
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
            if entry.owner is not None and entry.rule in ("ingest_and_form", "setup"):
                entry.about.add(entry.owner)  # a move keeps the users it is about
            if target == "individual":
                entry.owner = user  # forgetting them removes their own scope's content
            elif entry.rule not in ("ingest_and_form", "setup"):
                entry.owner = None  # an API add into a shared scope is about no one
            entry.approved = False  # a move is a new write into the target
            entry.client_id = None  # its client id belongs to the scope it was added to

    @rule(scope_type=scope_types, kind=kinds, user=users)
    @enabled("pin")
    def pin(self, scope_type: str, kind: str, user: str) -> None:
        sid = self.target(scope_type, user)
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
        sid = self.target(scope_type, user)
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

    @rule(scope_type=scope_types, which=st.sampled_from(["phone", "key", "none"]))
    @enabled("questions")
    def questions(self, scope_type: str, which: str) -> None:
        """Questions whose answers quote memory (a phone, a key): each version's coverage
        is a surface, so what was removed or redacted must not stay in an answer."""
        self.begin("questions", scope_type)
        asked = {
            "phone": ["What is Pat's phone?", "What does the team like?"],
            "key": ["What is the deploy key?"],
            "none": None,
        }[which]
        path = f"/agents/{self.agent}/questions/{scope_type}"
        status, answer = self.http.write("put", path, {"questions": asked})
        assert status == 200, answer

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
