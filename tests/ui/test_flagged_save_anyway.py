"""Pins and hand edits of a shared scope that hold personal data (issue 37): the page shows
the flags marked and offers "Save anyway", an override the audit log records; secrets are
redacted either way. Without the confirmation nothing is stored."""

from __future__ import annotations

from bson import ObjectId
from django.urls import reverse

from streams.memory.consolidation import consolidation_commit
from streams.memory.observations import observation_add
from streams.memory.scopes import scope_get
from streams.records.audit import audit_page
from tests.factories import ScopeFactory

EMAIL = "gene@example.com"
SK = "sk-proj-abcdefghijklmnopqrstuvwx123"


def shared(store, text: str):
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    consolidation_commit(
        store=store, scope=scope, expected_version=0, text=text, absorbed_ids=[],
        trigger="threshold", actor=None,
    )  # fmt: skip
    return scope_get(store=store, scope_id=scope.id)


def _summaries(store, action: str) -> list[dict]:
    return [e.summary for e in audit_page(store=store, action=action, limit=10).items]


def test_a_flagged_hand_edit_shows_its_flags_and_saves_only_when_confirmed(client_as, store):
    scope = shared(store, "The team deploys on Fridays.")
    operator = client_as("operator")
    url = reverse("ui:consolidation_edit", args=[scope.id])
    text = f"The team deploys on Fridays. Invoices go to {EMAIL}; token {SK}."
    refused = operator.post(url, {"text": text, "expected_version": 1})
    assert refused.status_code == 422
    page = refused.content.decode()
    assert 'id="flagged"' in page and "pii:email" in page
    assert f'data-flag="pii:email">{EMAIL}</mark>' in page
    panel = page[page.index('id="flagged"') :].split("</section>")[0]
    assert SK not in panel and "[redacted secret]" in panel  # the text as it would be stored
    assert 'name="save_anyway"' in page and "Save anyway" in page
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 1

    saved = operator.post(url, {"text": text, "expected_version": 1, "save_anyway": "1"})
    assert saved.status_code == 302
    after = scope_get(store=store, scope_id=scope.id)
    assert after.consolidation_version == 2
    assert EMAIL in (after.consolidation or "") and SK not in (after.consolidation or "")
    [summary] = _summaries(store, "consolidation.edit")
    assert summary["override_flags"] == ["pii:email"]


def test_a_flagged_pin_shows_its_flags_and_pins_only_when_confirmed(client_as, store):
    sentence = f"Invoices go to {EMAIL}."
    scope = shared(store, f"The team deploys on Fridays. {sentence}")
    operator = client_as("operator")
    url = reverse("ui:scope_pin", args=[scope.id])
    refused = operator.post(url, {"pin": sentence})
    assert refused.status_code == 422
    page = refused.content.decode()
    assert f'data-flag="pii:email">{EMAIL}</mark>' in page and 'name="save_anyway"' in page
    assert scope_get(store=store, scope_id=scope.id).pins == []

    pinned = operator.post(url, {"pin": sentence, "save_anyway": "1"})
    assert pinned.status_code == 302
    assert scope_get(store=store, scope_id=scope.id).pins == [sentence]
    [summary] = _summaries(store, "scope.pins")
    assert summary["override_flags"] == ["pii:email"]


def test_an_observation_edit_that_a_shared_scope_holds_says_it_waits_for_review(client_as, store):
    scope = shared(store, "The team deploys on Fridays.")
    before = observation_add(store=store, scope=scope, content="Invoices go out monthly.")
    operator = client_as("operator")
    url = reverse("ui:observation_edit", args=[before.id])
    response = operator.post(url, {"content": f"Invoices go to {EMAIL}."}, follow=True)
    assert response.status_code == 200
    assert "waits in the review queue" in response.content.decode()
    assert store.observations.get(ObjectId(before.id)).content == "Invoices go out monthly."
