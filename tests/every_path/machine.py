"""The every-path machine's state, helpers, set-up and invariant checks; the rules are
in write_rules.py and removal_rules.py (tests/test_every_path.py puts them together)."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
)

from tests.every_path.invariants import INVARIANTS
from tests.every_path.ledger import Entry, Snapshot
from tests.every_path.surfaces import collect, scope_kind
from tests.every_path.texts import KINDS, Text, make_text
from tests.every_path.world import GROUP_ID, GROUP_NAME, SHARD, USERS, Http, Receiver

EXAMPLES = int(os.environ.get("MEMORY_EVERY_PATH_EXAMPLES", "10"))
STEPS = int(os.environ.get("MEMORY_EVERY_PATH_STEPS", "20"))
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


class MachineBase(RuleBasedStateMachine):
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
        # Bulk jobs (id, action, the entry it took, the step) a later step may undo.
        self.bulk_jobs: list[tuple[str, str, Entry, int]] = []
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

    def target(self, scope_type: str, user: str) -> str | None:
        """Where a direct write goes; none into a forgotten user's own scope (only a late
        ingest or an import is expected to be refused for them: the tombstone paths)."""
        if scope_type == "individual" and user in self.forgotten:
            return None
        return self.scope_id(scope_type, user)

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
        if owner in self.forgotten and rule_name in ("ingest_and_form", "import"):
            # a late ingest or an import for a forgotten user must store nothing
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

    @staticmethod
    def _waiting(entry: Entry, queue: dict[str, Any]) -> str | None:
        return next(
            (o["id"] for o in queue["items"] if entry.text.marker in (o["content"] or "")), None
        )

    def observation_id(self, entry: Entry) -> str | None:
        if entry.observation_id:
            return entry.observation_id
        status, page = self.http.read(
            f"/scopes/{entry.scope_id}/observations",
            {"status": "all", "limit": 200, "include_superseded": "true"},
        )
        if status != 200:
            return None
        entry.observation_id = next(
            (o["id"] for o in page["items"] if entry.text.marker in (o["content"] or "")), None
        )
        return entry.observation_id

    # -- the invariants, after every step -------------------------------------------------------
    def surfaces(self) -> Snapshot:
        if self.snapshot is None or self.snapshot.step != self.step:
            self.snapshot = collect(
                http=self.http, agent_id=self.agent, step=self.step, receiver=self.receiver
            )
        return self.snapshot

    def check(self, name: str) -> None:
        snapshot = self.surfaces()  # read even when not checked: a run costs what CI's does
        if ONLY_INVARIANTS and name not in ONLY_INVARIANTS:
            return
        broken = INVARIANTS[name](self.entries, snapshot)
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

    @invariant()
    def inv_superseded_is_kept_not_current(self) -> None:
        self.check("superseded_is_kept_not_current")
