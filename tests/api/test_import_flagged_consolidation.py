"""An imported consolidation text passes the screen like any write (issue 37, 1): its
secrets are redacted in every scope; in a shared scope one flagged `pii:*` or
`instruction` is not taken as the scope's memory (the import applies the rest, says what
it left out and why, and the scope is consolidated again from its observations)."""

from __future__ import annotations

import uuid

import pytest

from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.api.conftest import API
from tests.api.test_export_import import _fresh_database, post_import

AGENT = f"a-{uuid.uuid4().hex[:8]}"  # the fresh database outlives a test: one agent each
SECRET = "sk-proj-" + "a1b2c3d4" * 4
EMAIL = "pat.flagged@example.org"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def _exported(api, store, key: ScopeKey, text: str) -> dict:
    scope, _ = scope_get_or_create(store=store, key=key)
    observation_add(store=store, scope=scope, content="The team ships on Fridays.")
    consolidation_edit(
        store=store, scope=scope_get(store=store, scope_id=scope.id),
        text="The team ships on Fridays.", expected_version=0, actor="op",
    )  # fmt: skip
    document = api.get(f"{API}/scopes/{scope.id}/export").json()
    [block] = document["scopes"]
    block["consolidation"] = text
    block["history"][-1]["text"] = text
    block["history"][-1].pop("digest", None)  # optional: it proves an item unchanged
    return document


@pytest.mark.parametrize("kind", ["individual", "group"], ids=["own", "group"])
def test_an_imported_consolidation_has_its_secret_redacted(
    api, store, settings, embedded_mongo, kind, request
):
    global AGENT
    AGENT = f"a-{uuid.uuid4().hex[:8]}"
    key = (
        ScopeKey.individual(AGENT, "gene") if kind == "individual" else ScopeKey.group(AGENT, "g1")
    )
    document = _exported(api, store, key, f"The team ships on Fridays. Deploy key {SECRET}.")
    fresh = _fresh_database(settings, embedded_mongo, store)
    request.addfinalizer(lambda: fresh.client.drop_database(fresh.db.name))
    response = post_import(api, document, agent=AGENT)
    assert response.status_code in (200, 201), response.content
    scopes = [
        s
        for s in fresh.db["memory_scopes"].find({"agent_id": AGENT}).limit(5)
        if s.get("consolidation_version")
    ]
    [scope] = scopes
    assert SECRET not in (scope.get("consolidation") or "")
    versions = list(fresh.db["memory_consolidations"].find({"scope_id": scope["_id"]}).limit(5))
    assert versions and all(SECRET not in v["text"] for v in versions)


def test_a_flagged_consolidation_of_a_shared_scope_is_left_out_and_the_rest_applies(
    api, store, settings, embedded_mongo, request
):
    global AGENT
    AGENT = f"a-{uuid.uuid4().hex[:8]}"
    document = _exported(
        api, store, ScopeKey.group(AGENT, "g1"), f"The team ships on Fridays. Mail {EMAIL}."
    )
    fresh = _fresh_database(settings, embedded_mongo, store)
    request.addfinalizer(lambda: fresh.client.drop_database(fresh.db.name))
    response = post_import(api, document, agent=AGENT)
    assert response.status_code in (200, 201), response.content
    [scope] = list(fresh.db["memory_scopes"].find({"agent_id": AGENT}).limit(5))
    assert EMAIL not in (scope.get("consolidation") or "")
    versions = list(fresh.db["memory_consolidations"].find({"scope_id": scope["_id"]}).limit(5))
    assert all(EMAIL not in v["text"] for v in versions)
    observations = list(fresh.db["memory_observations"].find({"scope_id": scope["_id"]}).limit(5))
    assert len(observations) == 1  # the rest applied
    assert "pii:email" in response.content.decode()  # the result says what and why
