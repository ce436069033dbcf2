"""The role matrix, enforced on the server: every page and partial for every role, and
every action for viewer / operator / admin (a viewer's direct POST is a 403)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from bson import ObjectId
from django.test import Client
from django.urls import reverse

from streams.core.documents import utcnow
from streams.jobs import job_create
from streams.memory.observations import observation_list
from streams.prompts import prompt_save
from tests.ui.helpers import HTMX, scope_with_history

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(store, settings):
    """One scope with history and pending observations, and one failed job."""
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = scope_with_history(store)
    observation = observation_list(store=store, scope=scope, limit=1).items[0]
    job = job_create(store=store, kind="consolidation", agent_id=scope.agent_id, scope_id=scope.id)
    store.jobs.finish(job.id_oid, status="failed", now=utcnow(), error="boom")
    prompt_save(
        store=store,
        agent_id=scope.agent_id,
        kind="consolidation",
        text="v1 {scope} {consolidation} {observations} {max_words}",
        author="seed",
    )
    return {"scope": scope.id, "observation": observation.id, "job": job.id, "agent": "support-bot"}


PAGES: list[tuple[str, Callable[[dict], list]]] = [
    ("ui:dashboard", lambda w: []),
    ("ui:scopes", lambda w: []),
    ("ui:scope_detail", lambda w: [w["scope"]]),
    ("ui:consolidation_compare", lambda w: [w["scope"]]),
    ("ui:scope_consolidation", lambda w: [w["scope"]]),
    ("ui:observation_row", lambda w: [w["observation"]]),
    ("ui:prompts", lambda w: []),
    ("ui:prompt_edit", lambda w: [w["agent"], "consolidation"]),
    ("ui:search", lambda w: []),
    ("ui:jobs", lambda w: []),
    ("ui:job_status", lambda w: [w["job"]]),
]

# (url name, args, POST data, what an allowed role gets)
ACTIONS: list[tuple[str, Callable[[dict], list], Callable[[dict], dict]]] = [
    (
        "ui:consolidation_edit",
        lambda w: [w["scope"]],
        lambda w: {"text": "x", "expected_version": 2},
    ),
    ("ui:consolidation_restore", lambda w: [w["scope"], 1], lambda w: {}),
    ("ui:consolidate", lambda w: [w["scope"]], lambda w: {}),
    (
        "ui:scope_settings",
        lambda w: [w["scope"]],
        lambda w: {"consolidation_threshold": 5, "consolidation_max_words": 300},
    ),
    ("ui:observation_add", lambda w: [w["scope"]], lambda w: {"content": "New."}),
    ("ui:observation_edit", lambda w: [w["observation"]], lambda w: {"content": "Edited."}),
    ("ui:observation_private", lambda w: [w["observation"]], lambda w: {"private": "true"}),
    ("ui:observation_delete", lambda w: [w["observation"]], lambda w: {}),
    (
        "ui:prompt_save",
        lambda w: [w["agent"], "consolidation"],
        lambda w: {
            "text": "{scope} {consolidation} {observations} {max_words}",
            "expected_version": 1,
        },
    ),
    ("ui:prompt_revert", lambda w: [w["agent"], "consolidation", 1], lambda w: {}),
    (
        "ui:prompt_dry_run",
        lambda w: [w["agent"], "consolidation"],
        lambda w: {
            "text": "{scope} {consolidation} {observations} {max_words}",
            "scope": w["scope"],
        },
    ),
    ("ui:job_retry", lambda w: [w["job"]], lambda w: {}),
]
# Forms an operator opens with GET before posting: viewers may not even see them.
OPERATOR_FORMS = ["ui:consolidation_edit", "ui:observation_edit", "ui:observation_delete"]


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
@pytest.mark.parametrize("name,args", PAGES, ids=[p[0] for p in PAGES])
def test_every_role_reads_every_page_and_partial(client_as, world, role, name, args):
    client: Client = client_as(role)
    url = reverse(name, args=args(world))
    full = client.get(url)
    partial = client.get(url, **HTMX)
    assert full.status_code in (200, 302), full.status_code
    assert partial.status_code == 200, partial.status_code


@pytest.mark.parametrize("name,args", PAGES, ids=[p[0] for p in PAGES])
def test_a_user_without_a_role_reads_nothing(client_as, world, name, args):
    client = client_as(None)
    assert client.get(reverse(name, args=args(world))).status_code == 403
    assert client.get(reverse(name, args=args(world)), **HTMX).status_code == 403


@pytest.mark.parametrize("name,args,data", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_a_viewers_direct_post_is_a_403_and_changes_nothing(
    client_as, world, store, name, args, data
):
    before = store.scopes.get(ObjectId(world["scope"]))
    response = client_as("viewer").post(reverse(name, args=args(world)), data(world))
    assert response.status_code == 403
    assert "needs the operator role" in response.content.decode()
    after = store.scopes.get(ObjectId(world["scope"]))
    assert after == before
    assert store.audit.collection.count_documents({"actor": "ui:viewer-user"}) == 0


@pytest.mark.parametrize("name", OPERATOR_FORMS)
def test_a_viewer_cannot_open_the_edit_forms(client_as, world, name):
    arg = world["observation"] if name.startswith("ui:observation") else world["scope"]
    assert client_as("viewer").get(reverse(name, args=[arg])).status_code == 403


@pytest.mark.parametrize("role", ["operator", "admin"])
@pytest.mark.parametrize("name,args,data", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_operators_and_admins_may_act_and_each_action_is_audited_once(
    client_as, world, store, role, name, args, data
):
    response = client_as(role).post(reverse(name, args=args(world)), data(world))
    assert response.status_code in (200, 302), response.content.decode()[:500]
    if name != "ui:prompt_dry_run":  # a dry run changes nothing, so it records nothing
        assert store.audit.collection.count_documents({"actor": f"ui:{role}-user"}) == 1


def test_forms_carry_a_csrf_token_and_a_post_without_one_is_refused(world, make_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("operator"))
    html = client.get(reverse("ui:scope_detail", args=[world["scope"]])).content.decode()
    # Every POST form carries the token; GET forms (filters, bulk bar, history) need none.
    forms = re.findall(r"<form\b([^>]*)>(.*?)</form>", html, re.S | re.I)
    post_forms = [body for attrs, body in forms if re.search(r'method="post"', attrs, re.I)]
    assert post_forms
    assert all('name="csrfmiddlewaretoken"' in body for body in post_forms)
    response = client.post(reverse("ui:observation_add", args=[world["scope"]]), {"content": "x"})
    assert response.status_code == 403
