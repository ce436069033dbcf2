"""One export document (issue 37, part 4): the Users page's Export JSON downloads exactly
the API's document, which the import takes back; admins import it on the Import page
(upload, then the result: applied, skipped, refused). Role checks are server-side."""

from __future__ import annotations

import json

import pytest
from bson import ObjectId
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from memory_admin.models import ApiKey
from streams.guard.screening import screened
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from streams.records.audit import audit_page

AGENT = "support-bot"
API = "/api/v1"


@pytest.fixture(autouse=True)
def offline_llm(settings):
    settings.MEMORY_LLM_PROVIDER = "offline"


@pytest.fixture
def api(db) -> Client:
    _, raw = ApiKey.generate(name="test-key", agent_ids=[])
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def gene(store):
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    observation_add(store=store, scope=individual, content="Gene likes green tea.")
    observation_add(store=store, scope=individual, content="Gene is pregnant.", private=True)
    store.scopes.remember_groups(ObjectId(individual.id), [{"id": "g1", "name": "Eden Team"}])
    store.scopes.set_pins(ObjectId(individual.id), [screened("Gene likes green tea.")])
    group, _ = scope_get_or_create(
        store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden Team"
    )
    observation_add(
        store=store, scope=group, content="Gene runs the Friday demo.", related_user_ids=["u-gene"]
    )
    return individual


def _query() -> dict[str, str]:
    return {"agent": AGENT, "user": "u-gene"}


def _without_time(document: dict) -> dict:
    return {k: v for k, v in document.items() if k != "exported_at"}


def test_the_ui_export_is_the_apis_document(client_as, api, gene):
    ui = client_as("viewer").get(reverse("ui:user_export"), _query())
    assert ui.status_code == 200 and ui["Content-Type"] == "application/json"
    from_api = api.get(f"{API}/agents/{AGENT}/users/u-gene/export")
    assert ui["Content-Disposition"] == from_api["Content-Disposition"]
    assert _without_time(json.loads(ui.content)) == _without_time(from_api.json())


def test_the_ui_export_imports_through_the_api(client_as, api, gene, store):
    document = json.loads(client_as("viewer").get(reverse("ui:user_export"), _query()).content)
    response = api.post(
        f"{API}/agents/{AGENT}/import", json.dumps(document), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["observations_already_there"] == 3  # the same store: all there


def _upload(client: Client, content: bytes, name: str = "memory.json"):
    return client.post(
        reverse("ui:user_import"),
        {"document": SimpleUploadedFile(name, content, content_type="application/json")},
    )


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_admins_may_import(client_as, api, gene, store, role):
    document = api.get(f"{API}/agents/{AGENT}/users/u-gene/export").content
    client = client_as(role)
    assert client.get(reverse("ui:user_import")).status_code == 403
    assert _upload(client, document).status_code == 403
    assert audit_page(store=store, action="agent.import").items == []


def test_an_admin_imports_the_export_into_a_fresh_store_and_sees_the_result(
    client_as, api, gene, store, settings, embedded_mongo
):
    from tests.api.test_export_import import _fresh_database

    document = client_as("viewer").get(reverse("ui:user_export"), _query()).content
    client = client_as("admin")
    page = client.get(reverse("ui:user_import"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'enctype="multipart/form-data"' in html and 'name="document"' in html
    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        response = _upload(client, document)
        assert response.status_code == 302
        result = client.get(response["Location"])
        html = result.content.decode()
        assert result.status_code == 200
        assert 'id="import-result"' in html
        assert "Applied" in html and "Skipped" in html and "Refused" in html
        assert 'data-count="observations_imported">3<' in html
        assert 'data-count="settings_applied">1<' in html
        restored = fresh.scopes.get(ObjectId(gene.id))
        assert restored.groups == [{"id": "g1", "name": "Eden Team"}]
        assert restored.pins == ["Gene likes green tea."]
        [entry] = audit_page(store=fresh, action="agent.import").items
        assert entry.actor == "ui:admin-user"
        # The same document again: everything is skipped, nothing is applied twice.
        again = client.get(_upload(client, document)["Location"]).content.decode()
        assert 'data-count="observations_imported">0<' in again
        assert 'data-count="observations_already_there">3<' in again
    finally:
        fresh.client.drop_database(fresh.db.name)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "not a JSON document"),
        (b"[1, 2]", "must be an export"),
        (json.dumps({"format": "other/1", "agent_id": AGENT, "scopes": []}).encode(), "format"),
    ],
)
def test_a_bad_document_is_422_on_the_page_and_stores_nothing(client_as, store, content, says):
    response = _upload(client_as("admin"), content)
    assert response.status_code == 422
    html = response.content.decode()
    assert 'id="import-errors"' in html and says in html
    assert audit_page(store=store, action="agent.import").items == []


def test_a_tampered_item_is_listed_and_nothing_is_stored(client_as, api, gene, store):
    document = api.get(f"{API}/scopes/{gene.id}/export").json()
    document["scopes"][0]["observations"][0]["content"] = "Gene likes coffee."
    response = _upload(client_as("admin"), json.dumps(document).encode())
    assert response.status_code == 422
    html = response.content.decode()
    assert "scopes[0].observations[0]" in html and "digest" in html
    assert audit_page(store=store, action="agent.import").items == []


def test_a_missing_file_is_422(client_as):
    response = client_as("admin").post(reverse("ui:user_import"), {})
    assert response.status_code == 422
    assert "field-error" in response.content.decode()


def test_the_users_page_links_the_import_page_for_admins_only(client_as, gene):
    url = reverse("ui:user_import")
    assert url in client_as("admin").get(reverse("ui:user_audit")).content.decode()
    assert url not in client_as("viewer").get(reverse("ui:user_audit")).content.decode()
