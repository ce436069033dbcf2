"""Call records that quote memory text: found and rewritten by what they quoted.

Two collections keep a copy of the memory context an agent was given: the context log
(`memory_context_calls`, its `xml`) and the chat proxy's calls (`memory_chat_calls`,
its injected `context`). Each record lists what it quoted (`quoted_observation_ids`,
`quoted_versions`, multikey-indexed), so removing text later finds the records by index
(`streams.records.context_scrub`). This is the one implementation both repositories use;
they differ only in the names of the text field and its token count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import UpdateOne
from pymongo.collection import Collection

from streams.store.indexes import IndexSpec, index

QUOTED_OBSERVATIONS = "quoted_observation_ids"
QUOTED_VERSIONS = "quoted_versions"
CHARS_PER_TOKEN = 4


def quoted_indexes(collection: str) -> list[IndexSpec]:
    """The records quoting an observation or a consolidation version (`<scope>:<version>`)."""
    return [index(collection, QUOTED_OBSERVATIONS), index(collection, QUOTED_VERSIONS)]


@dataclass(frozen=True)
class QuotedRecord:
    """A record's quoted text and what it quoted; as a change, the text to store and the
    ids and versions now scrubbed from it."""

    id: ObjectId
    text: str
    observation_ids: list[str]
    versions: list[str]


class QuotedText:
    """Find and rewrite a collection's records by what they quoted."""

    def __init__(self, collection: Collection, *, text_field: str, tokens_field: str) -> None:
        self.collection = collection
        self.text_field = text_field
        self.tokens_field = tokens_field

    def quoting(
        self,
        *,
        observation_ids: Sequence[str] = (),
        versions: Sequence[str] = (),
        except_user_id: str | None = None,
        limit: int,
    ) -> list[QuotedRecord]:
        """Records that quoted any of these observations (or, without them, any of these
        consolidation versions), by their multikey index."""
        query: dict[str, Any] = (
            {QUOTED_OBSERVATIONS: {"$in": list(observation_ids)}}
            if observation_ids
            else {QUOTED_VERSIONS: {"$in": list(versions)}}
        )
        if except_user_id is not None:
            query["user_id"] = {"$ne": except_user_id}
        fields = {self.text_field: 1, QUOTED_OBSERVATIONS: 1, QUOTED_VERSIONS: 1}
        return [
            QuotedRecord(
                id=doc["_id"],
                text=doc.get(self.text_field) or "",
                observation_ids=list(doc.get(QUOTED_OBSERVATIONS) or []),
                versions=list(doc.get(QUOTED_VERSIONS) or []),
            )
            for doc in self.collection.find(query, fields).limit(limit)
        ]

    def scrub(self, changes: list[QuotedRecord], now: datetime) -> int:
        """Store each change's text; its ids and versions are taken off the record's
        quoted lists, so a record is scrubbed once. Records rewritten."""
        if not changes:
            return 0
        result = self.collection.bulk_write(
            [
                UpdateOne(
                    {"_id": change.id},
                    {
                        "$set": {
                            self.text_field: change.text,
                            self.tokens_field: -(-len(change.text) // CHARS_PER_TOKEN),
                            "scrubbed_at": now,
                        },
                        "$pull": {
                            QUOTED_OBSERVATIONS: {"$in": change.observation_ids},
                            QUOTED_VERSIONS: {"$in": change.versions},
                        },
                    },
                )
                for change in changes
            ],
            ordered=False,
        )
        return result.modified_count
