"""The semantic layer: background embedding by windows, RRF reranking, and its fallbacks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from streams.context.assemble import context_assemble
from streams.core.documents import utcnow
from streams.llm.port import LLMError
from streams.memory.observation_changes import observation_delete, observation_update
from streams.search.embeddings import SemanticRanker, embeddings_compute
from streams.search.index import search_observations
from streams.store import MemoryStore
from tests.factories import ObservationFactory, ScopeFactory

AGENT = "agent-1"


class TopicEmbedder:
    """Vectors by topic: "feline" and "kitten" texts point one way, all else the other."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.failing = False

    def embed(self, texts: list[str], model: str) -> list[list[float]]:
        if self.failing:
            raise LLMError("embedding provider down")
        self.calls.append(list(texts))
        return [[1.0, 0.0] if ("feline" in t or "kitten" in t) else [0.0, 1.0] for t in texts]


def _later():
    return utcnow() + timedelta(minutes=10)  # past the lag that spares open transactions


def test_compute_embeds_new_observations_once_and_skips_deleted(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    kept = ObservationFactory.create(store=store, scope=scope, content="Has a kitten named Rust.")
    gone = ObservationFactory.create(store=store, scope=scope, content="Deleted note.")
    observation_delete(store=store, observation=gone)
    embedder = TopicEmbedder()

    assert embeddings_compute(store=store, provider=embedder, model="m1", now=_later()) == 1
    assert embedder.calls == [["Has a kitten named Rust."]]
    doc = store.observations.collection.find_one({"_id": ObjectId(kept.id)})
    assert doc["embedding"].as_vector().data == [1.0, 0.0] and doc["embedding_model"] == "m1"
    assert embeddings_compute(store=store, provider=embedder, model="m1", now=_later()) == 0


def test_a_failing_provider_leaves_the_window_for_the_next_run(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Likes cats.")
    embedder = TopicEmbedder()
    embedder.failing = True
    with pytest.raises(LLMError):
        embeddings_compute(store=store, provider=embedder, model="m1", now=_later())
    embedder.failing = False
    assert embeddings_compute(store=store, provider=embedder, model="m1", now=_later()) == 1


def test_a_paraphrase_sharing_no_term_is_found_through_its_embedding(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    first = ObservationFactory.create(store=store, scope=scope, content="Pet dog daily.")
    second = ObservationFactory.create(
        store=store, scope=scope, content="Dog shop visit, pet food again today."
    )
    # Shares no term with the query: text search can never find it.
    kitten = ObservationFactory.create(store=store, scope=scope, content="Our kitten sleeps.")
    embedder = TopicEmbedder()
    embeddings_compute(store=store, provider=embedder, model="m1", now=_later())

    text = search_observations(store=store, agent_id=AGENT, user_id="u1", query="feline pet dog")
    fused = search_observations(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        query="feline pet dog",
        semantic=SemanticRanker(provider=embedder, model="m1"),
    )

    assert [h.observation.id for h in text] == [first.id, second.id]
    # Every observation is near enough in so small a scope: in both lists, the text's two
    # come first (RRF), then the kitten that only its embedding found.
    assert [h.observation.id for h in fused] == [first.id, second.id, kitten.id]
    kitten_hit = next(h for h in fused if h.observation.id == kitten.id)
    assert kitten_hit.matched_terms == [] and kitten_hit.explanation is not None
    assert kitten_hit.explanation.mechanisms["semantic"] > 0
    # Vectors of another model do not count: text order stands.
    other = search_observations(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        query="feline pet dog",
        semantic=SemanticRanker(provider=embedder, model="m2"),
    )
    assert [h.observation.id for h in other] == [h.observation.id for h in text]


def test_a_vector_saved_after_a_search_is_seen_by_the_next(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Pet dog daily.")
    embedder = TopicEmbedder()
    embeddings_compute(store=store, provider=embedder, model="m1", now=_later())
    ranker = SemanticRanker(provider=embedder, model="m1")
    before = search_observations(
        store=store, agent_id=AGENT, user_id="u1", query="feline", semantic=ranker
    )
    kitten = ObservationFactory.create(store=store, scope=scope, content="A kitten naps.")
    embeddings_compute(
        store=store, provider=embedder, model="m1", now=_later(), start=utcnow() - timedelta(1)
    )
    after = search_observations(
        store=store, agent_id=AGENT, user_id="u1", query="feline", semantic=ranker
    )
    assert kitten.id not in [h.observation.id for h in before]
    assert after[0].observation.id == kitten.id


def test_failing_query_embedding_falls_back_to_text_and_keeps_round_trips(
    store: MemoryStore,
) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    ObservationFactory.create(store=store, scope=scope, content="Cat named Rust.")
    store.scopes.update_fields(ObjectId(scope.id), {"pending_observation_ids": []})
    embedder = TopicEmbedder()
    embedder.failing = True
    result = context_assemble(
        store=store,
        agent_id=AGENT,
        user_id="u1",
        message="Do you remember my cat?",
        semantic=SemanticRanker(provider=embedder, model="m1"),
    )
    assert [h.observation.content for h in result.hits] == ["Cat named Rust."]
    assert result.hits[0].score > 0.1  # a BM25 score, not a fused one


def test_a_content_change_drops_the_stale_vector(store: MemoryStore) -> None:
    scope = ScopeFactory.create(store=store, user_id="u1")
    observation = ObservationFactory.create(store=store, scope=scope, content="Has a kitten.")
    embeddings_compute(store=store, provider=TopicEmbedder(), model="m1", now=_later())

    observation_update(store=store, observation=observation, content="Has a dog.")

    doc = store.observations.collection.find_one({"_id": ObjectId(observation.id)})
    assert doc["embedding"] is None and doc["embedding_model"] is None
    # The walk's cursor is past it: it is embedded again as edited, and found by it.
    embedder = TopicEmbedder()
    assert embeddings_compute(store=store, provider=embedder, model="m1", now=_later()) == 1
    assert embedder.calls == [["Has a dog."]]
    doc = store.observations.collection.find_one({"_id": ObjectId(observation.id)})
    assert doc["embedding_model"] == "m1" and "embedding_stale" not in doc
