"""A scope's id lists (`pending_observation_ids`, `rebuild_observation_ids`): ids in and
out without the embedded store's quadratic array operators. A `$pull` of `{$in: ids}`
and an `$addToSet` with `$each` compare every id with every listed one (10,000 of each
took minutes): past `PULL_INLINE` ids the list is read, changed here and `$set` whole.
On a real MongoDB (`streams.store.flavour`, MEMORY_STORE_FLAVOUR=mongodb) the operators
take any number: they are linear there."""

from __future__ import annotations

from typing import Any

from bson import ObjectId
from pymongo.client_session import ClientSession
from pymongo.collection import Collection

from streams.store.flavour import EMBEDDED_LIST_INLINE, workarounds

# Ids a `$pull {$in}` or `$addToSet {$each}` takes on the embedded store; more: read, `$set`.
PULL_INLINE = EMBEDDED_LIST_INLINE


class ScopeIdLists:
    """The id-list updates of `ScopeRepository` (on `memory_scopes`)."""

    collection: Collection

    def flag_rebuild(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        session: ClientSession | None = None,
    ) -> None:
        """The consolidation history holds these observations' old text: rebuild pending."""
        add_to_list(
            self.collection, scope_id, "rebuild_observation_ids", observation_ids, session=session
        )

    def unflag_rebuild(self, scope_id: ObjectId, observation_ids: list[ObjectId]) -> None:
        """Nothing of these is left to rebuild (no version absorbed them after all)."""
        if observation_ids:
            self.drop_from_lists(scope_id, {"rebuild_observation_ids": set(observation_ids)})

    def drop_from_lists(
        self,
        scope_id: ObjectId,
        drop: dict[str, set[ObjectId]],
        *,
        session: ClientSession | None = None,
        attempts: int = 20,
    ) -> int:
        """Take ids out of the scope's id lists (pending, rebuild); 1 when a list changed.

        Read, filter here, then `$set` whole, on the condition that the lists are still
        what was read (outside a transaction a concurrent `$push` makes it a miss, and
        it is read again). A `$pull` of `{$in: ids}` costs lists x ids comparisons on
        the embedded store: 10,000 of each took minutes.
        """
        for _ in range(attempts):
            doc = self.collection.find_one(
                {"_id": scope_id}, {name: 1 for name in drop}, session=session
            )
            if doc is None:
                return 0
            kept = _without(doc, drop)
            if not kept:
                return 0
            query: dict[str, Any] = {"_id": scope_id}
            if session is None:
                query.update({name: doc.get(name, []) for name in kept})
            result = self.collection.update_one(query, {"$set": kept}, session=session)
            if result.matched_count == 1:
                return 1
        raise RuntimeError("the scope's lists kept changing; retry")

    def _lists_without(
        self, scope_id: ObjectId, drop: dict[str, set[ObjectId]], *, session: ClientSession | None
    ) -> tuple[dict[str, Any], dict[str, list[ObjectId]]] | None:
        """The scope's lists as read, and those that change without `drop`. Read in the
        caller's transaction, a write after its snapshot is a write conflict (the
        transaction is retried). None when the scope is gone."""
        drop = {name: ids for name, ids in drop.items() if ids}
        if not drop:
            return {}, {}
        doc = self.collection.find_one(
            {"_id": scope_id}, {name: 1 for name in drop}, session=session
        )
        if doc is None:
            return None
        return {name: doc.get(name, []) for name in drop}, _without(doc, drop)

    def pull_pending(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        session: ClientSession | None = None,
    ) -> int:
        """Take observations out of the pending list; 1 when the list changed, else 0."""
        if not observation_ids:
            return 0
        if _inline(self.collection, observation_ids):
            result = self.collection.update_one(
                {"_id": scope_id},
                {"$pull": {"pending_observation_ids": {"$in": observation_ids}}},
                session=session,
            )
            return result.modified_count
        return self.drop_from_lists(
            scope_id, {"pending_observation_ids": set(observation_ids)}, session=session
        )

    def push_pending(
        self,
        scope_id: ObjectId,
        observation_ids: list[ObjectId],
        *,
        session: ClientSession | None = None,
    ) -> None:
        """Back to pending (a restore, a review approval): each at most once."""
        add_to_list(
            self.collection, scope_id, "pending_observation_ids", observation_ids, session=session
        )
        if observation_ids:  # the age sweep's key (`ScopeRepository.pending_older_than`)
            self.collection.update_one(
                {"_id": scope_id},
                {"$min": {"pending_since": min(observation_ids)}},
                session=session,
            )


def add_to_list(
    collection: Collection,
    scope_id: ObjectId,
    name: str,
    ids: list[ObjectId],
    *,
    session: ClientSession | None,
    attempts: int = 20,
) -> None:
    """Append ids to one of a scope's id lists (pending, rebuild), each at most once.

    A few go in with `$addToSet`; more are merged here and the list `$set` whole, on
    the condition (outside a transaction) that it is still what was read, else it is
    read again. `$addToSet` with `$each` compares every new id with every listed one:
    a bulk deletion of 10,000 observations spent ~510 s there.
    """
    if not ids:
        return
    if _inline(collection, ids):
        collection.update_one(
            {"_id": scope_id}, {"$addToSet": {name: {"$each": ids}}}, session=session
        )
        return
    for _ in range(attempts):
        doc = collection.find_one({"_id": scope_id}, {name: 1}, session=session)
        if doc is None:
            return
        before = doc.get(name) or []
        after = list(dict.fromkeys([*before, *ids]))
        if len(after) == len(before):
            return
        query: dict[str, Any] = {"_id": scope_id}
        if session is None:
            query[name] = before
        if collection.update_one(query, {"$set": {name: after}}, session=session).matched_count:
            return
    raise RuntimeError("the scope's lists kept changing; retry")


def _inline(collection: Collection, ids: list[ObjectId]) -> bool:
    """Whether an array operator takes these ids at once (always on mongod)."""
    limit = workarounds(collection.database.client).list_inline_max
    return limit is None or len(ids) <= limit


def _without(doc: dict[str, Any], drop: dict[str, set[ObjectId]]) -> dict[str, list[ObjectId]]:
    """Each list of `doc` named in `drop` without those ids, for the lists that change."""
    kept: dict[str, list[ObjectId]] = {}
    for name, ids in drop.items():
        before = doc.get(name) or []
        after = [i for i in before if i not in ids]
        if len(after) != len(before):
            kept[name] = after
    return kept
