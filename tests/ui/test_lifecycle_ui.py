"""Lifecycle on the pages: retention in the scope settings and page, feedback counts in the
observation log and the search inspector."""

from __future__ import annotations

import re

from bson import ObjectId
from django.urls import reverse

from streams.actions.sweeps import do_retention_sweep
from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from tests.factories import ScopeFactory
from tests.ui.helpers import recall_search_params


def test_the_cap_is_set_in_the_settings_and_the_page_shows_what_it_purged(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    added = [
        observation_add(store=store, scope=scope, content=f"Crane {n} lifts {n * 3} tonnes")
        for n in range(12)
    ]
    consolidation_commit(
        store=store, scope=scope_get(store=store, scope_id=scope.id), expected_version=0,
        text="Cranes lift tonnes.", absorbed_ids=[o.id for o in added], trigger="threshold",
        actor=None,
    )  # fmt: skip
    client = client_as("operator")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "Retention: off" in page and 'name="max_observations"' in page
    bad = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": 3},
    )  # fmt: skip
    assert bad.status_code == 422
    ok = client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": 10},
        follow=True,
    )  # fmt: skip
    assert "Settings saved." in ok.content.decode()
    assert store.scopes.get(ObjectId(scope.id)).max_observations == 10
    assert do_retention_sweep(store=store) == 2
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert "keeps at most 10 observations (10 now)" in page
    assert 'data-retention-purged="2"' in page
    # Emptying the field turns the cap off.
    client.post(
        reverse("ui:scope_settings", args=[scope.id]),
        {"is_active": "on", "consolidation_threshold": 10, "consolidation_max_words": 500,
         "max_observations": ""},
    )  # fmt: skip
    assert store.scopes.get(ObjectId(scope.id)).max_observations is None


def test_feedback_counts_show_in_the_log_and_the_search_inspector(client_as, store):
    params = recall_search_params(store)
    client = client_as("viewer")
    html = client.get(reverse("ui:search"), params).content.decode()
    rust_id = re.search(r'data-observation-id="(\w+)">\s*<td class="num">1</td>', html).group(1)
    rust = store.observations.get(ObjectId(rust_id))
    assert rust.content == "Gene uses Rust."
    assert 'data-useful="0" data-useless="0"' in html
    store.observations.add_feedback(ObjectId(rust_id), useful=True, call_id=None)
    store.observations.add_feedback(ObjectId(rust_id), useful=False, call_id="c1")
    html = client.get(reverse("ui:search"), params).content.decode()
    assert 'data-useful="1" data-useless="1"' in html
    log = client.get(reverse("ui:scope_detail", args=[rust.scope_id])).content.decode()
    assert "feedback: 1 useful · 1 not" in log


def test_an_individual_contradiction_shows_in_the_log_with_newer_wins(client_as, store):
    scope = ScopeFactory.create(store=store, agent_id="a1", user_id="u1")
    old = observation_add(store=store, scope=scope, content="Ada lives in Porto.")
    new = observation_add(
        store=store, scope=scope_get(store=store, scope_id=scope.id), content="Ada lives in Lisbon."
    )
    viewer = client_as("viewer")
    page = viewer.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    # The older is superseded (issue 42): out of the current log, in the newer's chain.
    assert f'data-contradicts="{old.id}"' in page and f'data-replaced="{old.id}"' in page
    assert "newer wins" in page
    every = viewer.get(reverse("ui:scope_detail", args=[scope.id]), {"superseded": "on"})
    assert f'data-contradicts="{new.id}"' in every.content.decode()
