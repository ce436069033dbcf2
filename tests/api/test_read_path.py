"""`POST /agents/{agent}/context` and `GET /agents/{agent}/search` through the HTTP contract."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from bson import ObjectId
from django.test import Client

from memory_admin.integrations.llm import get_llm_provider
from memory_admin.jobs.tasks import compute_embeddings
from streams.core.documents import utcnow
from streams.memory.consolidation import consolidation_edit
from streams.memory.observation_changes import observation_delete
from streams.search.embeddings import embeddings_compute
from streams.search.relevance import relevance
from streams.store import MemoryStore
from tests.api.conftest import API, assert_error
from tests.eventually import eventually
from tests.factories import ObservationFactory, ScopeFactory


def _post(client: Client, agent: str, body: object):
    return client.post(
        f"{API}/agents/{agent}/context", data=json.dumps(body), content_type="application/json"
    )


def _setup(store: MemoryStore) -> dict:
    user = ScopeFactory.create(store=store, user_id="u1", display_name="Gene")
    other = ScopeFactory.create(store=store, user_id="u2")
    group = ScopeFactory.create(store=store, group=True, group_id="g1")
    consolidation_edit(
        store=store, scope=user, text="Gene likes <short> answers.", expected_version=0, actor="t"
    )
    mine = ObservationFactory.create(store=store, scope=user, content="Gene is learning Rust.")
    ObservationFactory.create(store=store, scope=other, content="u2 writes Rust daily.")
    shared = ObservationFactory.create(store=store, scope=group, content="The team uses Rust.")
    return {"user": user, "group": group, "mine": mine, "shared": shared}


def test_context_answers_xml_and_the_retrieval_decision(api: Client, store: MemoryStore) -> None:
    _setup(store)
    response = _post(
        api,
        "agent-1",
        {
            "user_id": "u1",
            "user_name": "Gene",
            "groups": [{"id": "g1", "name": "Eden Team"}],
            "session_id": "s1",
            "message": "hello there",
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["context"].startswith("<MemoryContext>")
    assert '<UserMemory user="Gene">Gene likes &lt;short&gt; answers.' in body["context"]
    assert "- Gene is learning Rust. (just now)" in body["context"]
    assert body["retrieval"] == {
        "triggered": False,
        "reason": (
            "no recall phrase, past-tense question, question about someone or unknown names"
        ),
        "results": [],
    }


def test_context_retrieval_results_carry_observations_and_scores(
    api: Client, store: MemoryStore
) -> None:
    data = _setup(store)
    for scope in (data["user"], data["group"]):
        store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
    response = _post(
        api,
        "agent-1",
        {"user_id": "u1", "groups": [{"id": "g1"}], "message": "What did I tell you about Rust?"},
    )
    assert response.status_code == 200, response.content
    retrieval = response.json()["retrieval"]
    assert retrieval["triggered"] is True
    assert retrieval["reason"] == "recall phrase: what did i tell"
    ids = {r["observation"]["id"] for r in retrieval["results"]}
    assert ids == {data["mine"].id, data["shared"].id}
    for result in retrieval["results"]:
        assert result["score"] > 0
        assert result["matched_terms"] == ["rust"] or "rust" in result["matched_terms"]
        assert result["observation"]["access_count"] == 1
        assert result["observation"]["last_accessed_at"] is not None
    # The access update is sent unacknowledged (w=0): wait for the store to apply it.
    stored = eventually(
        lambda: api.get(f"{API}/observations/{data['mine'].id}").json(),
        until=lambda o: o["access_count"] == 1,
    )
    assert stored["access_count"] == 1


def test_context_validation_and_access(api: Client, limited_api: Client) -> None:
    assert_error(_post(api, "agent-1", {"message": "hi"}), 422, "validation_error")
    assert_error(_post(api, "agent-1", {"user_id": "", "message": "hi"}), 422, "validation_error")
    assert_error(
        _post(api, "agent-1", {"user_id": "u1", "message": "hi", "extra": 1}),
        422,
        "validation_error",
    )
    assert_error(
        _post(api, "agent-1", {"user_id": "u1", "message": "x" * 20_001}), 422, "validation_error"
    )
    assert_error(
        _post(api, "agent-1", {"user_id": "u1", "message": "hi", "groups": [{"name": "x"}]}),
        422,
        "validation_error",
    )
    bad_json = api.post(
        f"{API}/agents/agent-1/context", data="{not json", content_type="application/json"
    )
    assert bad_json.status_code == 400
    assert_error(
        _post(limited_api, "agent-2", {"user_id": "u1", "message": "hi"}), 404, "not_found"
    )
    assert _post(limited_api, "agent-1", {"user_id": "u1", "message": "hi"}).status_code == 200
    assert_error(Client().post(f"{API}/agents/agent-1/context"), 401, "unauthorized")


def test_search_ranks_with_matched_terms_and_privacy(api: Client, store: MemoryStore) -> None:
    data = _setup(store)

    as_user = api.get(
        f"{API}/agents/agent-1/search", {"q": "rust", "user_id": "u1", "group_id": "g1"}
    )
    assert as_user.status_code == 200, as_user.content
    items = as_user.json()["items"]
    assert {i["observation"]["id"] for i in items} == {data["mine"].id, data["shared"].id}
    assert all(i["matched_terms"] == ["rust"] and i["score"] > 0 for i in items)
    assert set(as_user.json()) == {"items"}

    anonymous = api.get(f"{API}/agents/agent-1/search", {"q": "rust", "group_id": "g1"})
    assert [i["observation"]["id"] for i in anonymous.json()["items"]] == [data["shared"].id]

    one_scope = api.get(
        f"{API}/agents/agent-1/search", {"q": "rust", "scope_id": data["user"].id, "user_id": "u1"}
    )
    assert [i["observation"]["id"] for i in one_scope.json()["items"]] == [data["mine"].id]
    assert_error(
        api.get(f"{API}/agents/agent-1/search", {"q": "rust", "scope_id": data["user"].id}),
        404,
        "not_found",
    )

    observation_delete(store=store, observation=data["mine"])
    after = api.get(f"{API}/agents/agent-1/search", {"q": "rust", "user_id": "u1"})
    assert [i["observation"]["id"] for i in after.json()["items"]] == []


def test_search_validation_and_access(api: Client, limited_api: Client, store: MemoryStore) -> None:
    data = _setup(store)
    url = f"{API}/agents/agent-1/search"
    assert_error(api.get(url), 422, "validation_error")
    assert_error(api.get(url, {"q": "   "}), 422, "validation_error")
    assert_error(api.get(url, {"q": "rust", "limit": 0}), 422, "validation_error")
    assert_error(api.get(url, {"q": "rust", "limit": 51}), 422, "validation_error")
    assert_error(api.get(url, {"q": "rust", "scope_id": "nope"}), 404, "not_found")
    assert_error(
        api.get(f"{API}/agents/agent-2/search", {"q": "rust", "scope_id": data["group"].id}),
        404,
        "not_found",
    )
    assert_error(limited_api.get(f"{API}/agents/agent-2/search", {"q": "rust"}), 404, "not_found")
    assert limited_api.get(url, {"q": "rust"}).status_code == 200
    assert api.get(url, {"q": "the of and"}).json() == {"items": []}


def test_api_uses_embeddings_when_a_model_is_configured(
    fake_openai, settings, api: Client, store: MemoryStore
) -> None:
    settings.MEMORY_EMBEDDING_MODEL = "text-embedding-3-small"
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Gene keeps bees.")
    assert compute_embeddings.apply().get() == 0  # just written: inside the lag, not yet
    embedded = embeddings_compute(
        store=store,
        provider=get_llm_provider(),
        model="text-embedding-3-small",
        now=utcnow() + timedelta(minutes=10),
    )
    assert embedded == 1

    response = api.get(
        f"{API}/agents/{'agent-1'}/search", {"q": "bees", "user_id": "u1", "explain": "true"}
    )

    assert response.status_code == 200
    [item] = response.json()["items"]
    # First in both the text and the embedding lists: fused, it keeps the best text score.
    why = item["explanation"]
    assert "semantic" in why["mechanisms"]
    assert item["score"] == pytest.approx(sum(why["terms"].values()), abs=1e-5)
    assert len(fake_openai.embedding_requests) == 2  # the background batch, then the query
    assert fake_openai.embedding_requests[-1].body["input"] == ["bees"]


def test_search_explain_min_score_and_observed_window(api: Client, store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    old = ObservationFactory.create(
        store=store,
        scope=scope,
        content="Rust traits and Rust lifetimes",
        observed_at=utcnow() - timedelta(days=30),
    )
    new = ObservationFactory.create(store=store, scope=scope, content="a Rust service")
    url = f"{API}/agents/agent-1/search"

    plain = api.get(url, {"q": "rust lifetimes", "user_id": "u1"}).json()["items"]
    assert [i["observation"]["id"] for i in plain] == [old.id, new.id]
    assert all(i["explanation"] is None for i in plain)
    explained = api.get(url, {"q": "rust lifetimes", "user_id": "u1", "explain": "true"})
    why = explained.json()["items"][0]["explanation"]
    assert set(why["terms"]) == {"rust", "lifetim"}
    assert sum(why["terms"].values()) + sum(why["mechanisms"].values()) == pytest.approx(
        explained.json()["items"][0]["score"], abs=1e-4
    )
    assert list(why["ranks"]) == ["terms", "people", "proximity", "neighbours", "dates", "when"]

    # min_score is a relevance (0..1): each hit shows its own, the sigmoid of its score.
    assert [i["relevance"] for i in plain] == [relevance(i["score"]) for i in plain]
    assert all(0 < i["relevance"] < 1 for i in plain)
    between = (plain[0]["relevance"] + plain[1]["relevance"]) / 2
    strong = api.get(url, {"q": "rust lifetimes", "user_id": "u1", "min_score": between})
    assert [i["observation"]["id"] for i in strong.json()["items"]] == [old.id]
    everything = api.get(url, {"q": "rust lifetimes", "user_id": "u1", "min_score": 0})
    assert len(everything.json()["items"]) == 2
    nothing = api.get(url, {"q": "rust lifetimes", "user_id": "u1", "min_score": 1})
    assert nothing.json()["items"] == []
    cut = (utcnow() - timedelta(days=1)).isoformat()
    recent = api.get(url, {"q": "rust", "user_id": "u1", "observed_after": cut})
    assert [i["observation"]["id"] for i in recent.json()["items"]] == [new.id]
    earlier = api.get(url, {"q": "rust", "user_id": "u1", "observed_before": cut})
    assert [i["observation"]["id"] for i in earlier.json()["items"]] == [old.id]

    for bad in [
        {"min_score": "-1"},
        {"min_score": "nan"},
        {"min_score": "1.01"},  # a relevance: 0..1
        {"min_score": "2.5"},
        {"min_score": "high"},
        {"observed_after": "2024-01-01T00:00:00"},  # no time zone
        {"observed_after": "yesterday"},
        {"observed_after": "2024-02-01T00:00:00Z", "observed_before": "2024-01-01T00:00:00Z"},
        {"explain": "maybe"},
    ]:
        assert_error(api.get(url, {"q": "rust", **bad}), 422, "validation_error")


def test_search_counts_as_an_access(api: Client, store: MemoryStore) -> None:
    data = _setup(store)
    api.get(f"{API}/agents/agent-1/search", {"q": "rust", "user_id": "u1"})
    stored = eventually(
        lambda: store.observations.get(ObjectId(data["mine"].id)),
        until=lambda o: o is not None and o.access_count == 1,
    )
    assert stored is not None and stored.access_count == 1 and stored.last_accessed_at
