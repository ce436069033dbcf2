"""Item limits per scope: the cap grows with the conversation up to its ceiling, levels
resolve code < agent < scope, and the extraction prompt states every target's limits."""

from __future__ import annotations

import pytest

from streams.core.documents import utcnow
from streams.core.scope_limits import item_cap_for_tokens
from streams.drafts.dry_run import extraction_plan
from streams.memory.scope_limits import kind_limits, scope_limits
from tests.factories import ScopeFactory

AGENT = "agent-1"


@pytest.mark.parametrize(
    ("tokens", "ceiling", "cap"),
    [
        (0, 20, 5),
        (300, 20, 5),
        (1000, 20, 5),
        (1001, 20, 10),
        (2500, 20, 15),
        (5000, 20, 20),
        (50_000, 20, 20),
        (300, 3, 3),
        (9000, 1, 1),
    ],
)
def test_the_cap_grows_five_per_thousand_tokens_up_to_the_ceiling(tokens, ceiling, cap):
    assert item_cap_for_tokens(ceiling=ceiling, tokens=tokens) == cap


def test_levels_resolve_code_then_agent_then_scope(store):
    store.agents.ensure(AGENT, now=utcnow())
    scope = ScopeFactory.create(store=store, agent_id=AGENT, group=True)
    limits = scope_limits(store=store, scope=scope)
    assert (limits.item_words.value, limits.item_words.where) == (30, "code default")
    store.agents.set_limits(AGENT, {"scope_defaults": {"group": {"item_words": 40}}})
    limits = scope_limits(store=store, scope=scope)
    assert (limits.item_words.value, limits.item_words.where) == (40, "agent default")
    scope.item_words = 12
    limits = kind_limits(store=store, agent=store.agents.get(AGENT), kind="group", scope=scope)
    assert (limits.item_words.value, limits.item_words.where) == (12, "scope override")
    assert limits.consolidation_model.named_model is None  # the code's: the provider decides


def test_a_long_conversation_raises_every_targets_cap_in_the_prompt(store):
    store.agents.ensure(AGENT, now=utcnow())
    short = extraction_plan(
        store=store, agent_id=AGENT, conversation="user: I like tea.", user_name="Gene", draft=None
    )
    own = "- individual:dry-run-user: at most {} observations, each at most 25 words"
    assert own.format(5) in short.prompt
    long_line = "I keep notes about our sprint planning and the release train. " * 100
    long = extraction_plan(
        store=store, agent_id=AGENT, conversation=f"user: {long_line}", user_name="Gene", draft=None
    )
    assert own.format(10) in long.prompt
    assert "- collective: at most 10 observations, each at most 35 words" in long.prompt
    assert long.context.max_observations == 10


def test_a_custom_template_without_the_placeholder_gets_the_limits_at_the_end(store):
    from streams.prompts import prompt_save

    prompt_save(
        store=store,
        agent_id=AGENT,
        kind="extraction",
        text="Extract facts from {conversation} as JSON.",
        author="test",
    )
    plan = extraction_plan(
        store=store, agent_id=AGENT, conversation="user: I like tea.", user_name="Gene", draft=None
    )
    assert plan.prompt.endswith(
        "# How much to record in each place\n"
        "- individual:dry-run-user: at most 5 observations, each at most 25 words\n"
        "- collective: at most 5 observations, each at most 35 words"
    )
