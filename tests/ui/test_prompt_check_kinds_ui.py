"""The prompt editor's "Save anyway" step for consolidation and propagation drafts (issue
38, item 3), on every scope type that takes such a prompt: a draft failing a check the
prompt in effect passes is shown with the failure and saved only when confirmed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from streams.drafts.prompt_checks import check_create
from streams.memory.scopes import scope_get
from streams.prompts import DEFAULT_TEMPLATES
from tests.api.test_prompt_check_kinds import (
    CONSOLIDATION_CHECK,
    PROPAGATION_CHECK,
    TRAITS,
    responder,
)
from tests.factories import ScopeFactory

CASES = [
    *[("consolidation", kind, "DROP PLAN") for kind in TRAITS],
    ("propagation", "individual", "SHARE ALL"),
    ("propagation", "group", "SHARE ALL"),
]


@pytest.mark.parametrize(("prompt_kind", "kind", "word"), CASES)
def test_a_regressing_draft_needs_save_anyway(
    client_as, store, fake_openai, prompt_kind, kind, word
):
    fake_openai.set_responder(responder)
    scope = ScopeFactory.create(store=store, agent_id="a1", **TRAITS[kind])
    check = CONSOLIDATION_CHECK if prompt_kind == "consolidation" else PROPAGATION_CHECK
    check_create(
        store=store, agent_id="a1", name=check["name"], conversation=check["conversation"],
        user_name="User", expectations=check["expectations"], author="op",
        scope_id=scope.id, kind=prompt_kind,
    )  # fmt: skip
    client = client_as("operator")
    save = reverse("ui:prompt_save", args=["a1", prompt_kind])
    draft = {
        "scope": scope.id,
        "text": DEFAULT_TEMPLATES[prompt_kind] + f"\n{word}",
        "expected_version": 0,
    }
    refused = client.post(save, draft)
    assert refused.status_code == 422
    page = refused.content.decode()
    assert "Save anyway, failing 1 check" in page and check["name"] in page
    field = f"{prompt_kind}_prompt"
    assert getattr(scope_get(store=store, scope_id=scope.id), field) is None
    assert client.post(save, {**draft, "confirm": "1"}).status_code == 302
    assert getattr(scope_get(store=store, scope_id=scope.id), field) == draft["text"]
