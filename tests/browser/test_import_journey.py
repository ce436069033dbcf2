"""Export a user in Chromium and import the file on the Import page into a fresh store: the
download is the API's document, and the result says what was applied and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bson import ObjectId

from streams.guard.screening import screened
from streams.memory.observations import observation_add
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.api.test_export_import import _fresh_database
from tests.browser.test_journeys import _sign_in
from tests.services import needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"


def test_export_a_user_then_import_the_file_into_a_fresh_store(
    live_server, page, store, make_user, artifacts_dir: Path, settings, embedded_mongo, tmp_path
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    individual, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual(AGENT, "u-gene"), display_name="Gene"
    )
    observation_add(store=store, scope=individual, content="Gene likes green tea.")
    store.scopes.remember_groups(ObjectId(individual.id), [{"id": "g1", "name": "Eden Team"}])
    store.scopes.set_pins(ObjectId(individual.id), [screened("Gene likes green tea.")])
    make_user("admin", username="ada")
    _sign_in(page, live_server, "ada")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/users/?agent={AGENT}&user=u-gene")
    with page.expect_download() as download:
        page.click("text=Export JSON")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    document = json.loads(saved.read_text())
    assert document["format"] == "memory-admin/export-2"
    assert document["scopes"][0]["settings"]["groups"] == [{"id": "g1", "name": "Eden Team"}]

    fresh = _fresh_database(settings, embedded_mongo, store)
    try:
        page.goto(f"{live_server.url}/users/")
        page.click("text=Import an export…")
        page.wait_for_url(f"{live_server.url}/users/import/")
        page.set_input_files("#id_document", str(saved))
        page.click("#import-form button[type=submit]")
        page.locator("#import-result").wait_for()
        assert page.locator('[data-count="observations_imported"]').inner_text() == "1"
        assert page.locator('[data-count="settings_applied"]').inner_text() == "1"
        assert page.locator('[data-count="refused"]').inner_text() == "0"
        page.screenshot(path=str(artifacts_dir / "import_result.png"), full_page=True)
        restored = fresh.scopes.get(ObjectId(individual.id))
        assert restored.pins == ["Gene likes green tea."] and restored.groups

        # A file that is not an export: the page says so in place, and nothing is stored.
        bad = tmp_path / "notes.json"
        bad.write_text("{not json")
        page.set_input_files("#id_document", str(bad))
        page.click("#import-form button[type=submit]")
        page.locator("#import-errors").wait_for()
        assert "not a JSON document" in page.locator("#import-errors").inner_text()
        page.screenshot(path=str(artifacts_dir / "import_refused.png"), full_page=True)
    finally:
        fresh.client.drop_database(fresh.db.name)
