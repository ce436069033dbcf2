"""The same fact once per scope on the paths the API does not reach directly: propagation
copies and the normal form itself."""

from __future__ import annotations

from bson import ObjectId

from streams.core.documents import Observation
from streams.memory.observations import observation_add, observation_list
from streams.memory.propagation import _store_copies
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.memory.window import WINDOWS
from streams.search.dedup import normalized_text, text_key, token_similarity
from tests.factories import ScopeFactory


def test_the_normal_form():
    assert normalized_text("  Bob lives in Berlin. ") == "bob lives in berlin"
    assert normalized_text("BOB  lives\tin ＢＥＲＬＩＮ!!") == "bob lives in berlin"
    assert normalized_text("Straße") == normalized_text("STRASSE")  # case folding
    assert text_key("s1", "Bob lives in Berlin.") == text_key("s1", "bob lives in berlin")
    assert text_key("s1", "Bob lives in Berlin.") != text_key("s2", "Bob lives in Berlin.")
    assert token_similarity("a b c d e f g h i j", "a b c d e f g h i j k") >= 0.9
    assert token_similarity("a b c", "a b d") < 0.9


def test_a_propagated_copy_of_a_fact_the_target_holds_is_not_stored(store):
    source = ScopeFactory.create(store=store, agent_id="a1", user_id="u1")
    origin = observation_add(store=store, scope=source, content="Deploys freeze on Fridays.")
    collective, _ = scope_get_or_create(store=store, key=ScopeKey.collective("a1"))
    observation_add(store=store, scope=collective, content="Deploys freeze on fridays")

    def copy(text: str) -> Observation:
        return Observation(
            scope_id="", agent_id="a1", content=text, propagated_from=origin.id,
            related_user_ids=["u1"],
        )  # fmt: skip

    key = ScopeKey.collective("a1")
    assert _store_copies(store, source, [(key, copy("DEPLOYS FREEZE ON FRIDAYS!"))]).created == 0
    assert _store_copies(store, source, [(key, copy("Releases go out on Tuesdays."))]).created == 1
    fresh = scope_get(store=store, scope_id=collective.id)
    contents = sorted(o.content for o in observation_list(store=store, scope=fresh).items)
    assert contents == ["Deploys freeze on fridays", "Releases go out on Tuesdays."]
    assert fresh.pending_count == 2


def test_the_backfill_keys_old_observations_and_marks_old_duplicates(store):
    from io import StringIO

    from django.core.management import call_command

    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    old = []
    for text in ("The team uses Jira.", "The team uses Linear.", "Standups at nine."):
        old.append(
            observation_add(
                store=store, scope=scope_get(store=store, scope_id=scope.id), content=text
            )
        )
    # As stored before the rule: no keys, and the second one the same fact as the first.
    ids = [ObjectId(o.id) for o in old]
    store.observations.collection.update_many({"_id": {"$in": ids}}, {"$unset": {"text_key": ""}})
    store.observations.collection.update_one(
        {"_id": ids[1]}, {"$set": {"content": "the team uses JIRA"}}
    )
    WINDOWS.forget_database(store.db.name)  # a process that never read the old store
    out = StringIO()
    call_command("backfill_text_keys", stdout=out)
    assert "2 observations keyed, 1 old duplicates" in out.getvalue()
    first, second, third = (store.observations.get(ObjectId(o.id)) for o in old)
    assert first.text_key and third.text_key and second.text_key is None
    assert second.similar_to == first.id
    fresh = scope_get(store=store, scope_id=scope.id)
    again = observation_add(store=store, scope=fresh, content="THE TEAM USES JIRA!")
    assert again.duplicate and again.id == first.id
    call_command("backfill_text_keys", stdout=StringIO())  # idempotent
    assert store.observations.get(ObjectId(second.id)).similar_to == first.id
