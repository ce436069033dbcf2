"""The detectors run again over stored memory, after they change (`rescan_memory`).

What a rescan changes: an observation's `flags` and `flag_spans` (a widened instruction
detector, normalised forms), and its text where a secret is found that the old
detectors missed (redacted, re-indexed, its vector marked stale); a scope's current
consolidation where it holds such a secret (redacted in place). A live observation of
a shared scope newly flagged `instruction` moves into review where the scope's
instruction policy is `review` (as a write of it would be held today): out of search and
the pending list, into the queue (`moved_to_review`). Instruction-like sentences of a
consolidation need no rescan: the context reads them at render.

Batched and resumable: each batch's changes and the checkpoint that moves past them
commit in one transaction (`memory_rescans`, one document per rescan), so a rescan killed
halfway resumes after its last committed batch, and a batch it was inside never
happened. An observation already rescanned yields no change if met again (detection is
deterministic), so nothing is changed twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bson import ObjectId

from streams.core.documents import Observation, Scope, utcnow
from streams.guard.detectors import detect_and_redact
from streams.guard.screening import SHARED_SCOPE_TYPES, held_flags, screened
from streams.search.index import search_index_add, search_index_remove
from streams.store import MemoryStore, StoreSession

PHASES = ("observations", "consolidations", "done")


@dataclass
class RescanCounts:
    """What a rescan looked at and changed (or would change, on a dry run)."""

    observations: int = 0
    observations_changed: int = 0
    redacted: int = 0  # observations whose text lost a secret
    consolidations: int = 0
    consolidations_changed: int = 0
    flags_added: dict[str, int] = field(default_factory=dict)
    flags_removed: dict[str, int] = field(default_factory=dict)
    moved_to_review: int = 0  # live shared observations newly flagged `instruction`

    def to_dict(self) -> dict[str, Any]:
        return {
            "observations": self.observations,
            "observations_changed": self.observations_changed,
            "redacted": self.redacted,
            "consolidations": self.consolidations,
            "consolidations_changed": self.consolidations_changed,
            "flags_added": dict(self.flags_added),
            "flags_removed": dict(self.flags_removed),
            "moved_to_review": self.moved_to_review,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any] | None) -> RescanCounts:
        doc = doc or {}
        return cls(
            observations=int(doc.get("observations", 0)),
            observations_changed=int(doc.get("observations_changed", 0)),
            redacted=int(doc.get("redacted", 0)),
            consolidations=int(doc.get("consolidations", 0)),
            consolidations_changed=int(doc.get("consolidations_changed", 0)),
            flags_added=dict(doc.get("flags_added") or {}),
            flags_removed=dict(doc.get("flags_removed") or {}),
            moved_to_review=int(doc.get("moved_to_review", 0)),
        )


def observation_rescan_fields(observation: Observation) -> dict[str, Any]:
    """The fields the detectors would set on `observation` now; empty when none differ."""
    content, detection = detect_and_redact(observation.content)
    fields: dict[str, Any] = {}
    flags = list(detection.flags)
    spans = [span.to_dict() for span in detection.spans]
    if flags != list(observation.flags):
        fields["flags"] = flags
    if spans != list(observation.flag_spans):
        fields["flag_spans"] = spans
    if content != observation.content:
        # Its `text_key` stays: another observation of the scope may hold the redacted
        # text's key already (the key is unique), and the old one is a digest, no copy.
        fields.update(content=content, embedding=None, embedding_model=None)
        fields["embedding_stale"] = True
    return fields


def _count_flags(counts: RescanCounts, observation: Observation, fields: dict[str, Any]) -> None:
    if "flags" not in fields:
        return
    before, after = set(observation.flags), set(fields["flags"])
    for flag in after - before:
        counts.flags_added[flag] = counts.flags_added.get(flag, 0) + 1
    for flag in before - after:
        counts.flags_removed[flag] = counts.flags_removed.get(flag, 0) + 1


def rescan_batch(
    *,
    store: MemoryStore,
    phase: str,
    after: ObjectId | None,
    limit: int,
    counts: RescanCounts,
    session: StoreSession | None,
    dry_run: bool,
) -> tuple[str, ObjectId | None]:
    """Rescan the next `limit` items of `phase` after `after` (written with `session`
    unless `dry_run`), adding to `counts`; the phase and position to go on from."""
    if phase == "observations":
        found = store.rescans.observations_after(after, limit=limit, session=session)
        scope_cache: dict[str, Scope | None] = {}
        for observation in found:
            counts.observations += 1
            fields = observation_rescan_fields(observation)
            if not fields:
                continue
            counts.observations_changed += 1
            counts.redacted += "content" in fields
            _count_flags(counts, observation, fields)
            hold = _to_review(store, observation, fields, scope_cache, session)
            counts.moved_to_review += hold
            if not dry_run:
                _write_observation(store, observation, fields, session)
                if hold:
                    _hold(store, observation, session)
        if len(found) < limit:
            return "consolidations", None
        return phase, ObjectId(found[-1].id)
    if phase == "consolidations":
        scopes = store.rescans.consolidations_after(after, limit=limit, session=session)
        for scope_id, text, version in scopes:
            if not text:
                continue
            counts.consolidations += 1
            redacted, _ = detect_and_redact(text)
            if redacted == text:
                continue
            counts.consolidations_changed += 1
            if not dry_run and session is not None:
                store.rescans.set_consolidation_text(
                    scope_id, version=version, text=screened(redacted), session=session
                )
        if len(scopes) < limit:
            return "done", None
        return phase, scopes[-1][0]
    return "done", None


def _to_review(
    store: MemoryStore,
    observation: Observation,
    fields: dict[str, Any],
    scopes: dict[str, Scope | None],
    session: StoreSession | None,
) -> bool:
    """Whether the rescan moves this observation into review: newly flagged
    `instruction`, live and not held, in a scope whose policy holds instructions."""
    newly = "instruction" in fields.get("flags", []) and "instruction" not in observation.flags
    if not newly or not observation.live or observation.review_status is not None:
        return False
    if observation.scope_id not in scopes:
        scopes[observation.scope_id] = store.scopes.get(
            ObjectId(observation.scope_id), session=session
        )
    scope = scopes[observation.scope_id]
    if scope is None or scope.scope_type not in SHARED_SCOPE_TYPES:
        return False
    policy = store.instruction_policy
    return bool(held_flags(scope=scope, flags=["instruction"], instruction_policy=policy))


def _hold(store: MemoryStore, observation: Observation, session: StoreSession | None) -> None:
    """Into the review queue, in the batch's transaction: out of search and pending."""
    assert session is not None, "a rescan writes in its batch's transaction"
    review = {"reasons": ["flag:instruction"], "since": utcnow(), "supporting_group_ids": []}
    store.observations.update_fields(
        ObjectId(observation.id), {"review_status": "in_review", "review": review}, session=session
    )
    search_index_remove(store=store, observations=[observation], session=session)
    scope_oid = ObjectId(observation.scope_id)
    if store.scopes.pull_pending(scope_oid, [ObjectId(observation.id)], session=session):
        store.agents.adjust_counters(
            observation.agent_id, now=utcnow(), pending=-1, session=session
        )


def _write_observation(
    store: MemoryStore,
    observation: Observation,
    fields: dict[str, Any],
    session: StoreSession | None,
) -> None:
    assert session is not None, "a rescan writes in its batch's transaction"
    if "content" in fields:
        fields = {**fields, "content": screened(str(fields["content"]))}
    # Through the observations' own write: the text guard, and the scope's log revision
    # moves with a new text (the windows kept per process re-read it).
    store.observations.update_fields(
        ObjectId(observation.id),
        fields,
        scope_id=ObjectId(observation.scope_id),
        session=session,
    )
    if "content" in fields and observation.live:
        # Re-index: the old text's terms (the secret's among them) out, the new text's in.
        search_index_remove(store=store, observations=[observation], session=session)
        renewed = replace(observation, content=str(fields["content"]))
        search_index_add(store=store, observations=[renewed], session=session)


__all__ = ["PHASES", "RescanCounts", "observation_rescan_fields", "rescan_batch"]
