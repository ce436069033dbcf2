"""The prompt resolver: levels, drafts, and the guidance it says is not sent (and why)."""

from __future__ import annotations

from bson import ObjectId

from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create, scope_update
from streams.prompts import (
    DEFAULT_TEMPLATES,
    Draft,
    prompt_save,
    resolve_extraction,
    resolve_for_scope,
    resolve_template,
)

AGENT = "a1"


def group_scope(store):
    return scope_get_or_create(store=store, key=ScopeKey.group(AGENT, "g1"), display_name="Eden")[0]


def test_a_draft_replaces_only_its_own_level(store):
    individual, _ = scope_get_or_create(store=store, key=ScopeKey.individual(AGENT, "u1"))
    prompt_save(
        store=store,
        agent_id=AGENT,
        kind="consolidation",
        text="Scope {consolidation} {observations} {max_words}",
        author="op",
        scope_id=individual.id,
    )
    agent_draft = Draft("Agent draft {consolidation} {observations} {max_words}")
    part = resolve_template(
        store=store, agent_id=AGENT, kind="consolidation", scope=individual, draft=agent_draft
    )
    assert (part.source, part.version, part.draft) == ("scope", 1, False)  # the override wins
    scope_draft = Draft("Scope draft {consolidation} {observations} {max_words}", individual.id)
    part = resolve_template(
        store=store, agent_id=AGENT, kind="consolidation", scope=individual, draft=scope_draft
    )
    assert part.draft and part.where == "your draft" and part.text.startswith("Scope draft")


def test_group_guidance_sits_in_the_agents_template_and_a_paused_group_sends_none(store):
    group = group_scope(store)
    scope_update(
        store=store, scope=group, changes={"extraction_prompt": "Release dates."}, actor="op"
    )
    group = scope_get(store=store, scope_id=group.id)
    resolved = resolve_extraction(
        store=store,
        agent_id=AGENT,
        individual=None,
        groups=[("Eden", group)],
        collective=None,
        shards=[],
    )
    assert resolved.template.text == DEFAULT_TEMPLATES["extraction"]
    assert resolved.guidance_text("group:Eden") == "Release dates."
    assert resolved.guidance[0].where == "scope guidance v1"

    scope_update(store=store, scope=group, changes={"is_active": False}, actor="op")
    paused = resolve_for_scope(store=store, scope=scope_get(store=store, scope_id=group.id))
    [part] = paused["extraction"].guidance
    assert not part.in_effect and part.note == "the scope is paused"


def test_a_group_template_saved_before_guidance_existed_is_not_sent(store):
    group = group_scope(store)
    # What an older version mirrored onto the scope for a group's extraction override.
    store.scopes.update_fields(
        ObjectId(group.id),
        {"extraction_prompt": "Old template {conversation}", "guidance_version": None},
    )
    [part] = resolve_for_scope(store=store, scope=scope_get(store=store, scope_id=group.id))[
        "extraction"
    ].guidance
    assert not part.in_effect and "before scope guidance existed" in part.note


def test_clearing_group_guidance_falls_back_to_none(store):
    group = group_scope(store)
    scope_update(store=store, scope=group, changes={"extraction_prompt": "Dates."}, actor="op")
    scope_update(store=store, scope=group, changes={"extraction_prompt": None}, actor="op")
    fresh = scope_get(store=store, scope_id=group.id)
    assert (fresh.extraction_prompt, fresh.guidance_version) == (None, None)
    [part] = resolve_for_scope(store=store, scope=fresh)["extraction"].guidance
    assert part.source == "default" and part.text == ""
