"""Adding ids to a scope's id list (pending, rebuild): `$addToSet` with `$each` against
`streams.store.scope_lists.add_to_list` (read, merge, `$set`), on lists of a few thousand ids.

`$addToSet {$each}` compares every new id with every listed one on the embedded store
(lists x ids); the merge is linear. Runs only when named: the `$addToSet` rows take
about two minutes.
"""

from __future__ import annotations

import time

from bson import ObjectId
from pymongo import MongoClient

from benchmarks.harness import embedded_server, print_row, print_table
from streams.store.scope_lists import add_to_list

CASES = [(2_000, 200), (10_000, 200), (10_000, 2_000)]  # (listed, added)


def run(sizes: list[int] | None = None) -> None:
    headers = ["listed", "added", "$addToSet $each ms", "add_to_list ms"]
    rows: list[list[object]] = []
    with embedded_server() as server:
        client: MongoClient = MongoClient(server.uri)
        collection = client["bench_scope_lists"]["scopes"]
        for listed, added in CASES:
            row: list[object] = [listed, added]
            for merge in (False, True):
                scope_id = ObjectId()
                collection.insert_one({"_id": scope_id, "ids": [ObjectId() for _ in range(listed)]})
                ids = [ObjectId() for _ in range(added)]
                began = time.perf_counter()
                if merge:
                    add_to_list(collection, scope_id, "ids", ids, session=None)
                else:
                    collection.update_one({"_id": scope_id}, {"$addToSet": {"ids": {"$each": ids}}})
                row.append(round((time.perf_counter() - began) * 1000))
                doc = collection.find_one({"_id": scope_id})
                assert doc is not None and len(doc["ids"]) == listed + added
            print_row(row)
            rows.append(row)
        client.close()
    print_table("Adding ids to a scope's id list (embedded store)", headers, rows)
