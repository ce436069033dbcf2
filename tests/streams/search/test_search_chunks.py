"""Chunked postings: random writes keep every chunk, head and bound exact, and search
agrees with a brute-force ranking; an old observation stays findable in a big scope.

The layout's sizes are made tiny here (chunks of 3 postings, a top block of 3) so that a
few dozen writes seal chunks, turn terms common, evict from the top block and delete
from sealed chunks.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from bson import ObjectId

from streams.memory.observation_batch import BatchItem, observation_batch_add
from streams.memory.observation_changes import observation_delete, observation_update
from streams.memory.observations import observation_add
from streams.search.index import search_in_scopes
from streams.search.index_rebuild import scope_live_observations, search_index_problems
from streams.search.ranking import Ranking
from streams.search.text import query_terms, term_counts
from streams.store import MemoryStore, search_pending
from streams.store import postings as index_format
from tests.streams.search.test_search_index_exact import (
    USERS,
    assert_exact,
    collective,
    forget,
    individual,
    live_of,
)

TERMS_ONLY = Ranking(
    people=False, proximity=False, neighbours=False, support=False, names=False, dates=False
)
# Skewed: the first words are in most observations (common), the last in few (rare).
WORDS = ("coffee", "team", "deploy", "rust", "tea", "berlin", "quiet", "budget", "golang")
QUERIES = ("coffee", "coffee berlin", "team rust golang", "tea budget", "deploy quiet coffee")


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


def text(rng: random.Random, tag: int) -> str:
    """Skewed words, then `tag`: a word of its own ("n17"), so that no two texts are the
    same fact (`streams.search.dedup` stores a text once per scope) and every add stores a new
    observation, every edit lands. The tag matches no query and draws nothing from `rng`."""
    n = rng.randint(1, 6)
    words = [WORDS[min(int(rng.expovariate(0.5)), len(WORDS) - 1)] for _ in range(n)]
    return " ".join([*words, f"n{tag}"]) + "."


def brute_force(
    store: MemoryStore, scope_id: str, query: str, *, shared: bool = False
) -> dict[str, float]:
    """BM25 (the terms-only ranking) over the scope's live observations, from their text;
    in a shared scope the private ones count in the statistics (they are indexed) but are
    never hits, as no shared search shows them (`visibility.memory_removal`)."""
    live = scope_live_observations(store=store, scope_id=scope_id)
    hidden = {o.id for o in live if o.private} if shared else set()
    counts = {o.id: term_counts(o.content) for o in live}
    if not counts:
        return {}
    average = max(1.0, sum(sum(c.values()) for c in counts.values()) / len(counts))
    k1, b = TERMS_ONLY.k1, TERMS_ONLY.b
    scores: dict[str, float] = {}
    for term in set(query_terms(query)):
        df = sum(1 for c in counts.values() if term in c)
        idf = math.log(1 + (len(counts) - df + 0.5) / (df + 0.5))
        for oid, c in counts.items():
            if term in c:
                norm = k1 * (1 - b + b * sum(c.values()) / average)
                scores[oid] = scores.get(oid, 0.0) + idf * c[term] * (k1 + 1) / (c[term] + norm)
    return {oid: score for oid, score in scores.items() if oid not in hidden}


def check_search(store: MemoryStore, scope_id: str, *, exact: bool, step: str) -> None:
    scope = store.scopes.get(ObjectId(scope_id))
    assert scope is not None
    for query in QUERIES:
        expected = brute_force(store, scope_id, query, shared=scope.scope_type != "individual")
        hits = search_in_scopes(store=store, scopes=[scope], query=query, ranking=TERMS_ONLY)
        got = [(h.observation.id, h.score) for h in hits]
        for oid, score in got:  # every hit's score is exact, cut terms included
            assert score == pytest.approx(expected[oid], abs=1e-5), f"{step}: {query!r}"
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        if exact:  # nothing cut: the same hits as brute force (equal scores in any order)
            best = sorted(expected.values(), reverse=True)[:10]
            assert [s for _, s in got] == pytest.approx(best, abs=1e-5), step
            floor = best[-1] if best else 0.0
            above = {o for o, s in expected.items() if s > floor + 1e-5}
            assert above <= {o for o, _ in got}, step


@pytest.mark.parametrize(("seed", "rare_chunks"), [(1, 100), (2, 100), (3, 1), (4, 1)])
def test_random_writes_keep_chunks_exact_and_search_agrees(store, monkeypatch, seed, rare_chunks):
    monkeypatch.setattr(index_format, "CHUNK", 3)
    monkeypatch.setattr(index_format, "TOP", 3)
    monkeypatch.setattr(index_format, "RARE_CHUNKS", rare_chunks)
    rng = random.Random(seed)
    scopes = {user: individual(store, user) for user in USERS}
    scopes["collective"] = collective(store)
    ever = {s.id for s in scopes.values()}
    known = {}
    tags = itertools.count()  # one per text written: each text is distinct
    seen_sealed = seen_common = False
    for n in range(45):
        live = live_of(store, known)
        roll = rng.random()
        if roll < 0.3 or len(live) < 4:
            name = rng.choice(sorted(scopes))
            scope = store.scopes.get(ObjectId(scopes[name].id)) or scopes[name]
            o = observation_add(store=store, scope=scope, content=text(rng, next(tags)))
            assert not o.duplicate, n  # distinct texts: a new observation each time
            known[o.id] = o
            step = f"{n} add to {name}"
        elif roll < 0.45:
            scope = scopes[rng.choice(USERS)]
            items = [
                BatchItem(content=text(rng, next(tags)), client_id=f"{seed}-{n}-{i}")
                for i in range(rng.randint(2, 8))
            ]
            batch = observation_batch_add(store=store, scope=scope, items=items)
            assert all(batch.created) and not any(batch.duplicate_of), n
            for o in batch.observations:
                known[o.id] = o
            step = f"{n} batch of {len(items)}"
        elif roll < 0.65:
            edited = rng.choice(live)
            observation_update(store=store, observation=edited, content=text(rng, next(tags)))
            step = f"{n} edit"
        elif roll < 0.85:
            observation_delete(store=store, observation=rng.choice(live))
            step = f"{n} delete"
        elif roll < 0.95:
            observation_update(store=store, observation=rng.choice(live), private=True)
            step = f"{n} private"
        else:
            user = rng.choice(USERS)
            gone = scopes[user].id
            forget(store, user)
            assert store.search_index.scope_documents(ObjectId(gone)) == [], f"{n}: forgotten"
            scopes[user] = individual(store, user)
            ever.add(scopes[user].id)
            step = f"{n} forget {user}"
        assert_exact(store, ever, step)
        for scope_id in sorted(ever):
            assert search_index_problems(store=store, scope_id=scope_id) == [], step
            docs = store.search_index.scope_documents(ObjectId(scope_id))
            seen_sealed |= any("n" in d for d in docs)
            seen_common |= any(d.get("c", 0) > rare_chunks for d in docs)
        for scope in scopes.values():
            check_search(store, scope.id, exact=rare_chunks == 100, step=step)
    assert seen_sealed  # chunks were sealed (and written to, deleted from) along the way
    assert seen_common or rare_chunks == 100  # and terms turned common, read in part


def test_an_old_observation_is_found_among_thousands_sharing_its_common_word(store):
    """2,400 newer observations, 2,000 of them say "coffee", 400 "berlin" (both past the
    earlier layout's 200 newest postings): the first one, the only one about coffee in
    Berlin with "gene", is still the best hit for "coffee berlin". Each filler ends with a
    word of its own ("n17"): a text is stored once per scope (`streams.search.dedup`), and the
    fillers must all be stored for "coffee" to have its thousands of postings."""
    scope = individual(store, "u1")
    old = observation_add(store=store, scope=scope, content="Gene drinks his coffee in Berlin.")
    rng = random.Random(5)
    fillers = ("morning", "office", "cold", "cup", "strong", "sweet", "bitter", "late")
    contents = []
    for i in range(2400):
        words = ["coffee", *rng.sample(fillers, 3)]
        if i % 6 == 0:
            words = ["berlin", "trip", *rng.sample(fillers, 2)]
        contents.append(" ".join([*words, f"n{i}"]))
    # Batches of 200: a batch is one transaction, and on a loaded machine one of 500 once
    # outlived the test store's transaction lifetime (10 s; NoSuchTransaction, then Busy).
    for start in range(0, len(contents), 200):
        items = [
            BatchItem(content=c, client_id=f"filler-{start + i}")
            for i, c in enumerate(contents[start : start + 200])
        ]
        batch = observation_batch_add(store=store, scope=scope, items=items)
        assert all(batch.created) and not any(batch.duplicate_of)  # every filler stored
    fresh = store.scopes.get(ObjectId(scope.id))
    hits = search_in_scopes(store=store, scopes=[fresh], query="coffee in Berlin", limit=5)
    assert hits[0].observation.id == old.id
    assert hits[0].matched_terms == ["coffe", "berlin"]  # stems
    hits = search_in_scopes(store=store, scopes=[fresh], query="gene coffee", limit=5)
    assert hits[0].observation.id == old.id
    # A batch's postings wait as pending documents until the background fold (found by
    # search meanwhile, as above); folded now, the heads hold them, and the hit stays.
    search_pending.flush()  # waits for the folder's round in flight: no fold beside it
    hits = search_in_scopes(store=store, scopes=[fresh], query="coffee in Berlin", limit=5)
    assert hits[0].observation.id == old.id
    head = store.search_index.collection.find_one({"_id": f"{scope.id}:coffe"})
    assert head["c"] > index_format.RARE_CHUNKS  # "coffee" is common: read only in part


def _earlier_layout_scope(store):
    """A scope whose index the earlier layout wrote (one document per term, no `k`)."""
    scope = individual(store, "u1")
    first = observation_add(store=store, scope=scope, content="Gene prefers rust.")
    sid = ObjectId(scope.id)
    store.search_index.replace_scope(sid, [], session=None)
    store.search_index.collection.insert_many(
        [
            {"_id": f"{sid}:", "scope_id": sid, "term": "", "docs": 1, "length": 3},
            {
                "_id": f"{sid}:rust",
                "scope_id": sid,
                "term": "rust",
                "df": 1,
                "p": [{"o": ObjectId(first.id), "t": 1, "n": 3}],
            },
        ]
    )
    return scope, first


def test_rebuild_all_converts_an_index_of_the_earlier_layout(store):
    """A store written by the earlier layout (one document per term, no `k`) is invisible
    to search until `rebuild_search_index --all` converts it."""
    from io import StringIO

    from django.core.management import call_command

    scope, first = _earlier_layout_scope(store)
    sid = ObjectId(scope.id)
    fresh = store.scopes.get(sid)
    assert search_in_scopes(store=store, scopes=[fresh], query="rust") == []
    out = StringIO()
    call_command("rebuild_search_index", "--all", stdout=out)
    assert "scopes" in out.getvalue()
    hits = search_in_scopes(store=store, scopes=[fresh], query="rust")
    assert [h.observation.id for h in hits] == [first.id]
    assert_exact(store, {scope.id}, "converted")
    assert all("k" in d for d in store.search_index.scope_documents(sid))


def test_ensure_indexes_converts_an_earlier_layout_once(store):
    """The deploy step converts an upgraded store by itself, and records that it did."""
    from io import StringIO

    from django.core.management import call_command

    scope, first = _earlier_layout_scope(store)
    out = StringIO()
    call_command("ensure_indexes", stdout=out)
    assert "search index of 1 scopes converted" in out.getvalue()
    fresh = store.scopes.get(ObjectId(scope.id))
    assert [
        h.observation.id for h in search_in_scopes(store=store, scopes=[fresh], query="rust")
    ] == [first.id]
    again = StringIO()
    call_command("ensure_indexes", stdout=again)
    assert "converted" not in again.getvalue()  # the layout is recorded: no second pass
    assert store.search_index.layout() == 2
