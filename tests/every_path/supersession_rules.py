"""The rules of superseded facts (issue 42): supersede one observation by another of its
scope, and undo it. A superseded text is not removed (it stays in the log, once) but is
not current: no search answer shows it (`superseded_is_kept_not_current`)."""

from __future__ import annotations

from hypothesis.stateful import rule

from tests.every_path.machine import MachineBase, enabled, picks


class SupersessionRules(MachineBase):
    @rule(pick=picks, other=picks)
    @enabled("supersede")
    def supersede(self, pick: int, other: int) -> None:
        older = self.pick(pick, where=lambda e: e.what == "observation" and not e.superseded_at)
        if older is None or self.observation_id(older) is None:
            return
        newer = self.pick(
            other,
            where=lambda e: e.scope_id == older.scope_id and e.what == "observation",
        )
        if newer is None or self.observation_id(newer) is None:
            return
        self.begin("supersede", older.scope_type)
        status, answer = self.http.write(
            "post", f"/observations/{older.observation_id}/supersede", {"by": newer.observation_id}
        )
        # 409: either is held for review, superseded or deleted; 422: the same observation.
        assert status in (200, 409, 422), answer
        if status == 200:
            assert answer["superseded_by"] == newer.observation_id, answer
            older.superseded_at = self.step
        elif older.observation_id == newer.observation_id:
            assert status == 422, answer

    @rule(pick=picks)
    @enabled("unsupersede")
    def unsupersede(self, pick: int) -> None:
        entry = self.pick(pick, where=lambda e: e.superseded_at is not None)
        if entry is None:
            return
        self.begin("unsupersede", entry.scope_type)
        status, answer = self.http.write(
            "post", f"/observations/{entry.observation_id}/unsupersede"
        )
        # 409: its words are current in another observation again, or it was deleted.
        assert status in (200, 409), answer
        if status == 200:
            assert answer["superseded_by"] is None, answer
            entry.superseded_at = None

    @rule(pick=picks)
    @enabled("forget_request")
    def forget_request(self, pick: int) -> None:
        """A user's "forget what I said about ..." (review mode, the default): a proposal
        waits for a person; nothing is deleted yet, and the proposal repeats no text."""
        entry = self.pick(
            pick,
            where=lambda e: (
                e.scope_type == "individual"
                and e.text.kind == "plain"
                and e.owner is not None
                and e.superseded_at is None
                and not e.private
            ),
        )
        if entry is None:
            return
        self.begin("forget_request", entry.scope_type)
        topic = entry.text.content.split(": ", 1)[1]  # "the team likes green tea number 7"
        self.session += 1
        body = {
            "user_id": entry.owner,
            "messages": [
                {
                    "id": f"f{self.session}",
                    "role": "user",
                    "content": f"Please forget what I said about {topic}.",
                }
            ],
        }
        status, answer = self.http.write(
            "post", f"/agents/{self.agent}/sessions/f{self.session}/messages", body
        )
        assert status == 202, answer
        forget = answer["forget_request"]
        assert forget is not None and forget["status"] in ("proposed", "nothing_found"), answer
        if forget["status"] == "proposed" and self.observation_id(entry):
            assert entry.observation_id in forget["observation_ids"], (entry.describe(), forget)
