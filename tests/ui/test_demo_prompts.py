"""The demo's shard guidance is version 1 of its prompt history: shown, and restorable."""

from __future__ import annotations

import pytest
from bson import ObjectId
from django.core.management import call_command
from django.urls import reverse

from memory_admin.demo.data import SHARDS
from streams.memory.scopes import ScopeKey
from streams.prompts import prompt_history

pytestmark = pytest.mark.django_db

AGENT = "support-assistant"
NEW_GUIDANCE = "Bugs and outages users ran into, with the error shown and the workaround."


def test_seeded_shard_guidance_is_a_saved_version_that_a_save_can_be_reverted_to(client_as, store):
    call_command("seed_demo")
    name, seeded = SHARDS[AGENT][1]
    shard = store.scopes.find_by_identity(**ScopeKey.collective(AGENT, name).identity())
    history = prompt_history(store=store, agent_id=AGENT, kind="extraction", scope_id=shard.id)
    assert [(v.version, v.text) for v in history.items] == [(1, seeded)]
    assert shard.guidance_version == 1

    client = client_as("operator")
    editor = reverse("ui:prompt_edit", args=[AGENT, "extraction"]) + f"?scope={shard.id}"
    html = client.get(editor).content.decode()
    assert "this level: v1 by cli" in html
    assert "Nothing saved at this level yet" not in html
    assert "nothing saved on this scope" not in html

    saved = client.post(
        reverse("ui:prompt_save", args=[AGENT, "extraction"]),
        {"text": NEW_GUIDANCE, "expected_version": 1, "scope": shard.id},
        follow=True,
    )
    assert "as version 2" in saved.content.decode()
    reverted = client.post(
        reverse("ui:prompt_revert", args=[AGENT, "extraction", 1]),
        {"scope": shard.id},
        follow=True,
    )
    assert "to version 1 (saved as 3)" in reverted.content.decode()
    assert store.scopes.get(ObjectId(shard.id)).extraction_prompt == seeded
