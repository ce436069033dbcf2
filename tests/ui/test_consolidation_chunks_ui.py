"""Consolidation in chunks on the pages (issue 42 item 3): the estimate beside
"Consolidate now" in the four scope types, the job's chunks once it ran, and the
consolidation dry run naming its chunks."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.urls import reverse

from benchmarks.consolidation_chunks import pending_seed
from streams.memory.consolidation_chunks import chunk_plan
from streams.memory.consolidation_runs import consolidation_inputs
from streams.memory.scopes import scope_get
from streams.prompts import Draft
from tests.factories import ScopeFactory

HTMX = {"HTTP_HX_REQUEST": "true"}
TRAITS = {
    "individual": {"user_id": "u1"},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def seeded_scope(store, kind: str, count: int = 12):
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    store.scopes.update_fields(ObjectId(scope.id), {"consolidation_threshold": 10_000})
    pending_seed(store=store, scope=scope_get(store=store, scope_id=scope.id), count=count)
    return scope_get(store=store, scope_id=scope.id)


def small_budget(store, scope) -> int:
    folded = consolidation_inputs(store=store, scope=scope)[1]
    whole = chunk_plan(store=store, scope=scope, observations=folded, budget=10**9)
    return whole.fixed_tokens + whole.line_tokens[0] * 4 // len(folded)


def estimate_line(page: str) -> str:
    start = page.index('id="consolidation-estimate"')
    return " ".join(page[start : page.index("</p>", start)].split())


@pytest.mark.parametrize("kind", TRAITS)
def test_the_scope_page_shows_the_estimate_then_the_chunks_the_run_took(
    client_as, store, settings, django_capture_on_commit_callbacks, kind
):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = seeded_scope(store, kind)
    budget = settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS = small_budget(store, scope)
    folded = consolidation_inputs(store=store, scope=scope)[1]
    plan = chunk_plan(store=store, scope=scope, observations=folded, budget=budget)
    client = client_as("operator")
    page = client.get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    part = reverse("ui:scope_consolidation", args=[scope.id]) + "?part=estimate"
    assert f'hx-get="{part}" hx-trigger="load" hx-target="this"' in page  # after the page
    line = estimate_line(client.get(part, **HTMX).content.decode())
    assert f"12 to fold in {len(plan.chunks)} chunks" in line
    assert f"≈ {plan.prompt_tokens} prompt tokens" in line
    assert "≤ $0.0000 (offline-rules)" in line
    head = client.get(
        reverse("ui:scope_consolidation", args=[scope.id]) + "?part=head", **HTMX
    ).content.decode()
    assert f'hx-get="{part}" hx-trigger="load"' in head  # the header's refresh loads it again
    assert head.count('id="consolidate-button"') == page.count('id="consolidate-button"') == 1

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("ui:consolidate", args=[scope.id]))
    page = client.get(response["Location"]).content.decode()
    assert 'data-status="succeeded"' in page
    assert f'data-chunks="{len(plan.chunks)}"' in page and "12 observations absorbed" in page
    assert 'id="consolidation-estimate"' not in page  # nothing pending: no estimate
    assert client.get(part, **HTMX).content.decode().strip() == ""  # and no loop of loads


def test_a_viewer_sees_no_estimate_and_an_unpriced_model_says_so(client_as, store, settings):
    scope = seeded_scope(store, "individual", count=3)
    page = client_as("viewer").get(reverse("ui:scope_detail", args=[scope.id])).content.decode()
    assert 'id="consolidation-estimate"' not in page  # no button, no estimate
    settings.MEMORY_LLM_PROVIDER = "openai"
    settings.MEMORY_LLM_MODEL_SLOW = "a-model-with-no-price"
    part = reverse("ui:scope_consolidation", args=[scope.id]) + "?part=estimate"
    page = client_as("operator").get(part, **HTMX).content.decode()
    assert "a-model-with-no-price has no price" in estimate_line(page)


def test_the_consolidation_dry_run_names_its_chunks(client_as, store, settings, fake_openai):
    scope = seeded_scope(store, "group")
    budget = settings.MEMORY_CONSOLIDATION_CHUNK_TOKENS = small_budget(store, scope)
    folded = consolidation_inputs(store=store, scope=scope)[1]
    draft = "Fold {observations} into {consolidation} ({max_words} words)."
    sides = []
    for text in (None, draft):
        plan = chunk_plan(
            store=store,
            scope=scope,
            observations=folded,
            budget=budget,
            draft=Draft(text=text) if text else None,
        )
        sides.append([len(chunk) for chunk in plan.chunks])
    assert len(sides[0]) >= 3 and len(sides[1]) < len(sides[0])  # a shorter prompt: fewer
    response = client_as("operator").post(
        reverse("ui:prompt_dry_run", args=["a1", "consolidation"]),
        {"scope": scope.id, "text": draft},
        **HTMX,
    )
    page = response.content.decode()
    assert response.status_code == 200, page
    line = " ".join(page[page.index('id="dry-run-chunks"') :].split("</p>")[0].split())
    for side, sizes in zip(("the prompt in effect", "your draft"), sides, strict=True):
        shown = f"{len(sizes)} chunk{'s' if len(sizes) > 1 else ''} of {', '.join(map(str, sizes))}"
        assert f'{side} folds in <span data-chunks="{len(sizes)}">{shown}</span>' in line or (
            f'{side} in <span data-chunks="{len(sizes)}">{shown}</span>' in line
        )
    assert len(fake_openai.chat_requests) == sum(len(sizes) for sizes in sides)
    assert scope_get(store=store, scope_id=scope.id).consolidation_version == 0
