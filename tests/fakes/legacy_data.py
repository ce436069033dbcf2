"""A realistic legacy data set, written the way the earlier system stored it.

`legacy_dataset_write` fills `memory_sessions`, `memory_user` and `memory_agent` of a
database with ObjectId ids spread over months (as the old code made them), the old
field names of domain.md "Legacy data", and the awkward cases real data has: episodes,
an empty item, a directive without a user, a suggestion without a shard, an id listed
as unabsorbed that no item has, a shard document without a name. It returns what it
wrote, so tests can check the migration's report against the source.
"""

from __future__ import annotations

import random
import struct
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo.database import Database

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
# The old system's agent and user ids are ObjectIds (domain.md "Legacy data"); the new
# collections keep their 24-hex strings, which is what AGENTS and USERS hold.
AGENT_OIDS = (ObjectId("65e1a0000000000000000a01"), ObjectId("65e1a0000000000000000a02"))
USER_OIDS = tuple(ObjectId(f"65e1a0000000000000000b0{n}") for n in range(1, 5))
AGENTS = tuple(str(oid) for oid in AGENT_OIDS)
USERS = tuple(str(oid) for oid in USER_OIDS)
SHARDS = {
    "product-feedback": "Feedback about the product: what users like, dislike, or ask for.",
    "bugs": "Defects users ran into, with the steps and versions they mention.",
}
DIRECTIVES = (
    "Always answer {user} in British English.",
    "{user} prefers short answers with code first.",
    "Do not suggest paid plans to {user}.",
    "{user} wants dates written as YYYY-MM-DD.",
    "Call {user} by their first name.",
)
SUGGESTIONS = (
    "Users ask for a dark mode in the dashboard.",
    "Export to CSV would save teams time.",
    "The onboarding tour is too long.",
    "Search should match partial words.",
)
FACTS = (
    "The API rate limit is 600 requests per minute.",
    "Version 4.2 fixed the login loop on Safari.",
    "Invoices are generated on the first of each month.",
)
EPISODES = ("{user} asked about pricing and left satisfied.", "{user} reported an outage.")


@dataclass
class LegacyDataset:
    """What was written: documents per collection, and the expected fate of each item."""

    documents: dict[str, int] = field(default_factory=dict)
    items: Counter = field(default_factory=Counter)  # "pending", "consolidated", skip reasons
    users: list[dict[str, Any]] = field(default_factory=list)
    shards: list[dict[str, Any]] = field(default_factory=list)


class _Ids:
    """ObjectIds with increasing creation times, as the old code made them one by one."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.at = START

    def next(self) -> ObjectId:
        self.at += timedelta(minutes=self.rng.randint(1, 60 * 36))
        seconds = int(self.at.timestamp())
        return ObjectId(struct.pack(">I", seconds) + self.rng.randbytes(8))


def legacy_dataset_write(db: Database, *, seed: int = 7) -> LegacyDataset:
    """Write the data set into `db` (its legacy collections must be empty)."""
    rng = random.Random(seed)
    ids = _Ids(rng)
    out = LegacyDataset()
    items: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    shards: list[dict[str, Any]] = []

    def item(agent: ObjectId | str, memory_type: str, content: str, **extra: Any) -> dict[str, Any]:
        oid = ids.next()
        doc = {
            "_id": oid,
            "agent_id": agent,
            "source_session_id": f"sess-{rng.randint(1000, 9999)}",
            "memory_type": memory_type,
            "content": content,
            "source_message_ids": [f"msg-{rng.randint(10_000, 99_999)}" for _ in range(2)],
            "related_users": [],
            "shard_id": None,
            "agent_owner": "owner-acme",
            "created_at": oid.generation_time.replace(tzinfo=None),  # the old code stored naive
            **extra,
        }
        items.append(doc)
        return doc

    for agent in AGENT_OIDS:
        shard_ids = {name: ids.next() for name in SHARDS}
        unabsorbed_by_shard: dict[str, list[ObjectId]] = {name: [] for name in SHARDS}
        facts_by_shard: dict[str, list[ObjectId]] = {name: [] for name in SHARDS}
        for user in USER_OIDS:
            directives = [
                item(agent, "directive", text.format(user=user), related_users=[user])
                for text in rng.sample(DIRECTIVES, 3)
            ]
            for text in EPISODES:
                item(agent, "episode", text.format(user=user), related_users=[user])
                out.items["episode (not migrated)"] += 1
            unabsorbed = directives[-1:]  # the newest was not consolidated yet
            out.items["consolidated"] += len(directives) - 1
            out.items["pending"] += 1
            users.append(
                {
                    "_id": ids.next(),
                    "agent_id": agent,
                    "user_id": user,
                    "content": f"{user} likes concise, British-English answers.",
                    "unabsorbed_memory_ids": [d["_id"] for d in unabsorbed],
                    "fully_formed_memory": True,
                    "last_updated_at": ids.at.replace(tzinfo=None),
                }
            )
        for name in SHARDS:
            for text in SUGGESTIONS[:3]:
                doc = item(agent, "suggestion", text, shard_id=shard_ids[name])
                doc["related_users"] = [rng.choice(USER_OIDS)]
            newest = items[-1]["_id"]
            unabsorbed_by_shard[name].append(newest)
            out.items["consolidated"] += 2
            out.items["pending"] += 1
            for text in FACTS:
                facts_by_shard[name].append(
                    item(agent, "fact", text, shard_id=shard_ids[name])["_id"]
                )
                out.items["pending"] += 1
            shards.append(
                {
                    "_id": shard_ids[name],
                    "agent_id": agent,
                    "shard_name": name,
                    "extraction_prompt": SHARDS[name],
                    "is_active": name != "bugs" or agent == AGENT_OIDS[0],
                    "content": f"What {agent} users said about {name}: dark mode, CSV export.",
                    "unabsorbed_memory_ids": unabsorbed_by_shard[name],
                    "facts": facts_by_shard[name],
                    "fully_formed_memory": True,
                    "last_updated_at": ids.at.replace(tzinfo=None),
                    "max_facts_per_shard": 50,
                    "max_agent_memories_before_consolidation": 10,
                }
            )

    # The awkward cases of real data.
    item(AGENT_OIDS[0], "directive", "   ", related_users=[USER_OIDS[0]])
    out.items["empty content"] += 1
    item(AGENT_OIDS[0], "directive", "Be formal with whoever this is.")
    out.items["directive without a user"] += 1
    # No shard (so the collective scope), and an agent id written as a string, as some were.
    item(AGENTS[1], "suggestion", "A mobile app would help field staff.")
    out.items["pending"] += 1
    users[0]["unabsorbed_memory_ids"].append(ObjectId())  # listed, but no such item
    shards.append({"_id": ids.next(), "agent_id": AGENT_OIDS[1], "shard_name": "", "content": "x"})

    db["memory_sessions"].insert_many(items)
    db["memory_user"].insert_many(users)
    db["memory_agent"].insert_many(shards)
    out.documents = {
        "memory_sessions": len(items),
        "memory_user": len(users),
        "memory_agent": len(shards),
    }
    out.users, out.shards = users, shards
    return out
