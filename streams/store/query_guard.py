"""A command listener that flags queries no declared index serves, or lists with no bound.

Our answer to "every query indexed" that does not depend on one engine's
`explain()`: every filter sent to a `memory_*` collection must put an
equality, `$in` or range on the leading field of a declared index (or `_id`),
and every list (find, aggregate) must be bounded: a limit, an `_id` list, the
full key of a unique index, or a range closed on both ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from pymongo import monitoring

from streams.store.indexes import IndexSpec

SERVED_OPERATORS = {"$eq", "$in", "$gt", "$gte", "$lt", "$lte", "$all"}
CHECKED_COMMANDS = {
    "find",
    "aggregate",
    "count",
    "distinct",
    "update",
    "delete",
    "findAndModify",
    "bulkWrite",
}


class QueryGuard(monitoring.CommandListener):
    def __init__(self, indexes: Iterable[IndexSpec]) -> None:
        self.catalog: dict[str, list[IndexSpec]] = {}
        for spec in indexes:
            self.catalog.setdefault(spec.collection, []).append(spec)
        self._violations: list[str] = []
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in CHECKED_COMMANDS:
            return
        problem = check_command(event.command_name, event.command, self.catalog)
        if problem:
            with self._lock:
                self._violations.append(problem)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> list[str]:
        """The violations seen since the last call (and forget them)."""
        with self._lock:
            found, self._violations = self._violations, []
        return found


def check_command(
    name: str, command: Mapping[str, Any], catalog: dict[str, list[IndexSpec]]
) -> str | None:
    if name == "bulkWrite":
        return _check_bulk_write(command, catalog)
    collection = command.get(name)
    if not isinstance(collection, str) or not collection.startswith("memory_"):
        return None
    specs = catalog.get(collection, [])
    for query, bounded in _queries(name, command):
        problem = _check_filter(query, specs)
        if problem is None and bounded is False and not _is_bounded(query, specs):
            problem = "an unbounded list: no limit, no _id list, no closed range"
        if problem:
            return f"{name} on {collection} {query!r}: {problem}"
    return None


def _check_bulk_write(
    command: Mapping[str, Any], catalog: dict[str, list[IndexSpec]]
) -> str | None:
    """A client-level `bulkWrite` (several collections in one command): each of its
    updates and deletes is checked as the collection's own command would be."""
    namespaces = [info.get("ns", "") for info in command.get("nsInfo") or []]
    for op in command.get("ops") or []:
        for kind, plural in (("update", "updates"), ("delete", "deletes")):
            if kind in op and isinstance(op[kind], int) and op[kind] < len(namespaces):
                collection = namespaces[op[kind]].split(".", 1)[-1]
                single = {kind: collection, plural: [{"q": op.get("filter") or {}}]}
                problem = check_command(kind, single, catalog)
                if problem:
                    return problem
    return None


def _queries(name: str, command: Mapping[str, Any]) -> list[tuple[dict[str, Any], bool | None]]:
    """Each filter the command carries, with whether it is a limited list (None: not a list)."""
    if name == "find":
        return [(command.get("filter") or {}, bool(command.get("limit")))]
    if name == "aggregate":
        pipeline = command.get("pipeline") or []
        first = pipeline[0] if pipeline else {}
        if any("$group" in stage or "$count" in stage for stage in pipeline):
            return [(first.get("$match", {}), None)]  # a count or a summary, not a list
        has_limit = any("$limit" in stage for stage in pipeline)
        return [(first.get("$match", {}), has_limit)]
    if name in {"count", "distinct", "findAndModify"}:
        return [(command.get("query") or {}, None)]
    if name == "update":
        return [(u.get("q") or {}, None) for u in command.get("updates", [])]
    if name == "delete":
        return [(d.get("q") or {}, None) for d in command.get("deletes", [])]
    return []


def _check_filter(query: dict[str, Any], specs: list[IndexSpec]) -> str | None:
    if "$or" in query or "$and" in query or "$nor" in query:
        return "a top-level $or/$and/$nor (a full scan on the embedded store: use $in)"
    leading = {"_id"} | {spec.leading_field for spec in specs}
    if any(field in leading and _served(query[field]) for field in query):
        return None
    return f"no equality or range on a leading index field (indexes lead with {sorted(leading)})"


def _served(condition: Any) -> bool:
    if not isinstance(condition, dict):
        return True  # plain equality
    operators = {key for key in condition if key.startswith("$")}
    return not operators or bool(operators & SERVED_OPERATORS)


def _is_bounded(query: dict[str, Any], specs: list[IndexSpec]) -> bool:
    id_condition = query.get("_id")
    if id_condition is not None and (
        not isinstance(id_condition, dict) or "$in" in id_condition or "$eq" in id_condition
    ):
        return True
    for spec in specs:
        fields = [key for key, _ in spec.keys]
        if spec.unique and all(f in query and not isinstance(query[f], dict) for f in fields):
            return True
    for condition in query.values():
        if isinstance(condition, dict):
            lower = {"$gt", "$gte"} & condition.keys()
            upper = {"$lt", "$lte"} & condition.keys()
            if lower and upper:
                return True
    return False
