"""An operator in a browser (issue 38, item 5): support corrected what extraction formed
(an edit, a delete with a reason); the extraction prompt page lists both (the deleted
words withheld), "Make a check" makes one in a click, and "Suggest a change" (offline
provider) opens a draft in the editor with the dry run one click away."""

from __future__ import annotations

from pathlib import Path

import pytest
from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
from streams.actions import Actor
from streams.actions.observations import do_observation_delete, do_observation_update
from streams.actions.sessions import do_session_form
from streams.memory.formation import IncomingMessage, formation_run, messages_ingest
from tests.browser.test_journeys import _sign_in
from tests.factories import ScopeFactory
from tests.services import needs_chromium
from tests.task_mode import run_job, settle

pytestmark = [pytest.mark.browser, needs_chromium]
AGENT = "support-bot"
LINES = [
    "I moved to Lisbon last month.",
    "My favourite editor is Helix.",
    "Our team deploys on Fridays.",
]


def _formed(store) -> list:
    messages_ingest(
        store=store, agent_id=AGENT, session_id="s1", user_id="u1", user_name="Gene",
        groups=[{"id": "eden", "name": "Eden Team"}],
        messages=[IncomingMessage(id=f"m{n}", role="user", content=text)
                  for n, text in enumerate(LINES, 1)],
        settings=formation_settings(),
    )  # fmt: skip
    job = do_session_form(
        store=store, actor=Actor.cli(), agent_id=AGENT, session_id="s1",
        settings=formation_settings(),
    )  # fmt: skip
    run_job(
        store=store,
        job_id=job.id,
        work=lambda r: formation_run(store=store, run=r, settings=formation_settings()),
    )
    settle(store)
    docs = store.observations.collection.find({"agent_id": AGENT}).sort("created_at", 1).limit(10)
    from streams.core.documents import Observation

    return [Observation.from_mongo(d) for d in docs]


def test_an_operator_turns_corrections_into_a_check_and_a_suggestion(
    live_server, page, store, make_user, artifacts_dir: Path, settings
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    ScopeFactory.create(
        store=store, agent_id=AGENT, group=True, group_id="eden", display_name="Eden Team"
    )
    observations = _formed(store)
    assert len(observations) >= 2, [o.content for o in observations]
    edited, deleted = observations[0], observations[-1]
    do_observation_update(
        store=store, actor=Actor.ui("sam"), observation=edited,
        content=edited.content.rstrip(".") + ", Portugal.", reason="add the country",
    )  # fmt: skip
    gone = store.observations.get(ObjectId(deleted.id))
    do_observation_delete(
        store=store, actor=Actor.ui("sam"), observation=gone, reason="a guess, not said"
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")

    page.goto(f"{live_server.url}/prompts/{AGENT}/extraction/")
    panel = page.locator("#corrections")
    assert panel.locator("li.correction").count() == 2
    removed = panel.locator('li[data-what="delete"]')
    assert "a guess, not said" in removed.inner_text()
    assert deleted.content not in panel.inner_text()  # the deleted words are withheld
    assert "Portugal" in panel.locator('li[data-what="edit"]').inner_text()
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "corrections_list.png"), full_page=True)

    panel.locator('li[data-what="edit"] button.make-check').click()
    page.get_by_text("Made the extraction check").wait_for()
    assert "some observation contains" in page.locator("#checks").inner_text()

    page.locator("#suggest").click()
    page.locator("#suggestion").wait_for()
    assert "Rules learnt from support corrections:" in page.locator("#id_text").input_value()
    assert page.locator("#experiment-slot").count() == 1
    page.locator("#suggestion").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "corrections_suggestion.png"), full_page=True)


@pytest.mark.parametrize(
    ("prompt_kind", "expect", "value"),
    [("consolidation", "keeps", "Pro plan"), ("propagation", "lands_in", "collective")],
)
def test_an_operator_creates_consolidation_and_propagation_checks_on_their_pages(
    live_server, page, store, make_user, artifacts_dir: Path, settings, prompt_kind, expect, value
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    team = ScopeFactory.create(
        store=store, agent_id=AGENT, group=True, group_id="eden", display_name="Eden Team"
    )
    make_user("operator", username="olivia")
    _sign_in(page, live_server, "olivia")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/prompts/{AGENT}/{prompt_kind}/?scope={team.id}")
    form = page.locator("#kind-check-form")
    form.locator("#id_kind_check_name").fill(f"{prompt_kind} {expect}")
    form.locator("#id_check_observations").fill(
        "The account is on the Pro plan.\nThe team deploys on Fridays."
    )
    form.locator("#id_kind_expect_1").select_option(expect)
    form.locator("#id_kind_value_1").fill(value)
    form.locator("#save-kind-check").click()
    page.get_by_text(f"Saved the check “{prompt_kind} {expect}”.").wait_for()
    assert f"{prompt_kind} {expect}" in page.locator("#checks").inner_text()
    page.locator("#run-checks").click()
    page.locator(f'tr[data-check="{prompt_kind} {expect}"]').wait_for()
    page.locator("#checks").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / f"checks_{prompt_kind}.png"), full_page=True)
