"""Give observations stored before the rule their `text_key` (`backfill_text_keys`).

Walks a scope's log in `seq` windows. A live observation without a key gets one; when the
scope holds its fact already (an old duplicate), it keeps no key and is marked `similar_to`
the one that has it, so the observation log offers the merge. Idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass

from bson import ObjectId

from streams.core.documents import Scope
from streams.search.dedup import text_key
from streams.store import MemoryStore
from streams.store.observations import TextTaken

WINDOW = 500


@dataclass
class BackfillCount:
    keyed: int = 0
    duplicates: int = 0


def text_keys_backfill(*, store: MemoryStore, scope: Scope) -> BackfillCount:
    count = BackfillCount()
    oid = ObjectId(scope.id)
    for low in range(0, scope.observation_seq, WINDOW):
        window = store.observations.seq_window(
            oid, low_seq=low, high_seq=min(low + WINDOW, scope.observation_seq)
        )
        missing = [o for o in window if not o.deleted and not o.text_key]
        if not missing:
            continue
        keys = {o.id: text_key(scope.id, o.content) for o in missing}
        live = store.observations.live_by_text_key(sorted(set(keys.values())))
        for observation in missing:
            key = keys[observation.id]
            kept = live.get(key)
            if kept is None:
                try:
                    store.observations.update_fields(ObjectId(observation.id), {"text_key": key})
                except TextTaken:  # a writer stored the same fact since the read
                    kept = store.observations.live_by_text_key([key]).get(key)
                else:
                    live[key] = observation
                    count.keyed += 1
                    continue
            if kept is not None and kept.id != observation.id:
                store.observations.update_fields(
                    ObjectId(observation.id), {"similar_to": ObjectId(kept.id)}
                )
                count.duplicates += 1
    return count
