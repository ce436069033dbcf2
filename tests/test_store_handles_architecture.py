"""No raw store handles outside `streams/store/` (issue 41), held by an AST rule.

import-linter sees modules, not attributes: `store.db["memory_scopes"].find_one(...)` or
`store.sessions.buffers.find_one(...)` imports no pymongo and passes every contract. These
rules read the code itself:

1. no `.db`, `.client` or `.collection` on a store (a name, attribute or call whose name
   says `store`: `store`, `self.store`, `get_store()`) outside `streams/store/`;
2. no pymongo collection method called on a repository's attribute
   (`store.sessions.buffers.find_one(...)`) outside `streams/store/`;
3. in `memory_admin/api/` and `memory_admin/ui/`, no repository method called on a store
   through any name (`store.scopes.get(...)`, `s = get_store(); s.observations...`, a
   parameter typed `MemoryStore`): they call actions and selectors;
4. rules 1 and 2 hold in `benchmarks/` too: a benchmark seeds and counts through
   `store.seeding` (streams/store/seeding.py), which nothing in `streams/` or
   `memory_admin/` calls.

Each rule is shown to fail on a planted violation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RAW_HANDLES = {"db", "client", "collection"}
PYMONGO_METHODS = {
    "aggregate",
    "bulk_write",
    "count_documents",
    "delete_many",
    "delete_one",
    "distinct",
    "estimated_document_count",
    "find",
    "find_one",
    "find_one_and_delete",
    "find_one_and_replace",
    "find_one_and_update",
    "insert_many",
    "insert_one",
    "replace_one",
    "update_many",
    "update_one",
    "watch",
}


def _root_name(node: ast.expr) -> str | None:
    """The name a chain starts from: `store` for `store.a.b`, `get_store` for `get_store().a`,
    `store` for `self.store.a` (the last named step before the chain's own attributes)."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            break
        else:
            return None
    # `self.store.x` -> "store"; `store.x` -> "store"; `get_store().x` -> "get_store"
    for name in reversed(names):
        if name != "self":
            return name
    return None


def _is_store(node: ast.expr) -> bool:
    """A store by its name: `store`, `*_store` (`listened_store`), `get_store()`,
    `MemoryStore(...)`."""
    root = _root_name(node)
    return root is not None and (
        root in ("store", "get_store", "MemoryStore") or root.endswith("_store")
    )


def store_repositories(source: str) -> set[str]:
    """`MemoryStore`'s repository attributes: `self.<name> = <module>.<Class>(...)`."""
    tree = ast.parse(source)
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MemoryStore"]
    found = set()
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr.endswith(("Repository", "Reader"))
        ):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    found.add(target.attr)
    return found


REPOSITORIES = store_repositories((ROOT / "streams" / "store" / "__init__.py").read_text())


def raw_handles(source: str) -> list[str]:
    """Rule 1: `.db`, `.client`, `.collection` reached from a store."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in RAW_HANDLES and _is_store(node.value)
    ]


def collection_calls(source: str) -> list[str]:
    """Rule 2: `store.<repository>.<attribute>.<pymongo method>(...)`."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PYMONGO_METHODS
        ):
            continue
        owner = node.func.value  # `store.sessions.buffers`
        if (
            isinstance(owner, ast.Attribute)
            and isinstance(owner.value, ast.Attribute)
            and owner.value.attr in REPOSITORIES
            and _is_store(owner.value.value)
        ):
            out.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return out


def store_names(tree: ast.AST) -> set[str]:
    """The names a module binds to a store, whatever they are called: assigned from
    `get_store()`, `MemoryStore(...)` or a `.store`, or parameters typed `MemoryStore`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_store(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif (
            isinstance(node, ast.arg)
            and node.annotation is not None
            and "MemoryStore" in ast.unparse(node.annotation)
        ):
            names.add(node.arg)
    return names


def repository_calls(source: str) -> list[str]:
    """Rule 3: `<a store, by any name>.<repository>.<method>(...)`."""
    tree = ast.parse(source)
    aliases = store_names(tree)
    out = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in REPOSITORIES
        ):
            continue
        owner = node.func.value.value
        if _is_store(owner) or (isinstance(owner, ast.Name) and owner.id in aliases):
            out.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return out


def seeding_calls(source: str) -> list[str]:
    """Rule 4: `store.seeding` (raw inserts past the services) outside benchmarks and tests."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "seeding" and _is_store(node.value)
    ]


def _files(*folders: str) -> list[Path]:
    return [
        path
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "migrations" not in path.parts and not path.is_relative_to(ROOT / "streams" / "store")
    ]


def _violations(rule, files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in files
        for hit in rule(path.read_text(encoding="utf-8"))
    ]


def test_the_rules_know_the_store_repositories():
    assert {"scopes", "observations", "sessions", "privacy", "bulk", "exchange"} <= REPOSITORIES


def test_no_raw_store_handle_outside_the_store():
    assert _violations(raw_handles, _files("streams", "memory_admin", "benchmarks")) == []


def test_no_collection_call_on_a_repository_outside_the_store():
    assert _violations(collection_calls, _files("streams", "memory_admin", "benchmarks")) == []


def test_the_services_do_not_seed():
    assert _violations(seeding_calls, _files("streams", "memory_admin")) == []


def test_the_benchmarks_seed_through_the_store():
    """The rules see the benchmarks' seeding: there is some, and it passes rules 1 and 2."""
    seeded = _violations(seeding_calls, _files("benchmarks"))
    assert len(seeded) >= 30, seeded


def test_a_violation_planted_in_a_benchmark_fails():
    """benchmarks/seed.py with its seeding put back on the raw collection breaks rules 1 and 2."""
    source = (ROOT / "benchmarks" / "seed.py").read_text(encoding="utf-8")
    planted = source.replace(
        'store.seeding.insert_many("observations", ', "store.observations.collection.insert_many("
    )
    assert planted != source
    assert raw_handles(source) == [] and collection_calls(source) == []
    assert raw_handles(planted) and collection_calls(planted)


def test_the_api_and_ui_call_no_repository_through_any_name():
    folders = ("memory_admin/api", "memory_admin/ui")
    assert _violations(repository_calls, _files(*folders)) == []


@pytest.mark.parametrize(
    ("rule", "planted"),
    [
        (raw_handles, "repo = RecountRepository(store.db)"),
        (raw_handles, 'get_store().db.command("ping")'),
        (raw_handles, "self.store.client.admin.command('ping')"),
        (raw_handles, "rows = store.scopes.collection.find({})"),
        # benchmarks/: what they did before `store.seeding`
        (raw_handles, "store.observations.collection.insert_many(docs, ordered=False)"),
        (raw_handles, "n = MemoryStore(client, db).jobs.collection.count_documents({})"),
        (raw_handles, "store.db.client.drop_database(store.db.name)"),
        (collection_calls, "store.usage.top.insert_one({'_id': day})"),
        (seeding_calls, 'store.seeding.insert_many("observations", docs)'),
        (collection_calls, 'before = store.sessions.buffers.find_one({"_id": 1})'),
        (collection_calls, "self.store.privacy.observations.update_many({}, {})"),
        (repository_calls, "scope = store.scopes.get(oid)"),
        (repository_calls, "s = get_store()\npage = s.observations.list_page(x)"),
        (repository_calls, "get_store().jobs.insert(job)"),
        (repository_calls, "def view(m: MemoryStore):\n    m.agents.busiest()"),
    ],
)
def test_a_planted_violation_breaks_its_rule(rule, planted):
    assert rule(planted), planted


@pytest.mark.parametrize(
    ("rule", "clean"),
    [
        (raw_handles, "self.client.chat.completions.create()"),  # the OpenAI client
        (raw_handles, "peer = conn.client"),  # gunicorn's connection
        (collection_calls, "store.sessions.recount(bid, min_messages=1)"),
        (repository_calls, "scope_get(store=store, scope_id=x)"),
        (repository_calls, "found = user_audit(store=s)\nfound.scopes.get(x)"),  # a dict
        (raw_handles, 'store.seeding.insert_many("observations", docs)'),
        (collection_calls, 'store.seeding.count("jobs", {"status": "succeeded"})'),
    ],
)
def test_what_is_not_a_violation_passes(rule, clean):
    assert rule(clean) == [], clean
