"""A believable demo data set, written through the same services the app uses.

Three agents, thirty users, four groups, two collective shards with their own
extraction prompts, a few hundred observations with provenance, and
consolidations with a few versions of history. Deterministic (seeded), so a
screenshot of the demo looks the same on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from streams.activity import activity_record
from streams.consolidation import consolidation_commit
from streams.documents import Observation, Scope, utcnow
from streams.observations import append_in_transaction
from streams.scopes import ScopeKey, scope_get, scope_get_or_create
from streams.store import MemoryStore

AGENTS = ("support-assistant", "coding-mentor", "travel-planner")
FIRST_NAMES = (
    "Gene",
    "Amara",
    "Lars",
    "Priya",
    "Tomás",
    "Mei",
    "Kwame",
    "Sofia",
    "Hiro",
    "Nadia",
    "Oskar",
    "Leila",
    "Rafael",
    "Ingrid",
    "Dev",
    "Chiara",
    "Yusuf",
    "Hana",
    "Mateo",
    "Elif",
    "Jonas",
    "Aisha",
    "Pieter",
    "Lucía",
    "Tariq",
    "Saanvi",
    "Emil",
    "Zanele",
    "Marco",
    "Yuki",
)
GROUPS = {
    "support-assistant": [("eden-team", "Eden Team"), ("billing-squad", "Billing Squad")],
    "coding-mentor": [("platform-guild", "Platform Guild")],
    "travel-planner": [("mobile-crew", "Mobile Crew")],
}
SHARDS = {
    "support-assistant": [
        (
            "product-feedback",
            "Feature requests, complaints and praise about the product, with the feature named.",
        ),
        (
            "known-issues",
            "Bugs and outages users ran into, with the workaround if one was found.",
        ),
    ],
}
PERSONAL = {
    "support-assistant": [
        "{name} prefers answers as short numbered steps.",
        "{name} works in the {team} and manages the billing settings for the account.",
        "{name} asked to be addressed informally.",
        "{name} is on the Pro plan and renews in March.",
        "{name} uses the desktop app on Linux, not the web version.",
        "{name} wants invoices sent to a shared finance mailbox.",
        "{name} corrected earlier advice: the SSO provider is Okta, not Azure AD.",
        "{name} plans to migrate the team's workspace to the EU region next quarter.",
        "{name} dislikes being asked to restart the app as a first step.",
    ],
    "coding-mentor": [
        "{name} is learning Rust and is comfortable with Python.",
        "{name} prefers examples before explanations.",
        "{name} is preparing for a systems design interview in three weeks.",
        "{name} asked to avoid unsafe code in Rust examples.",
        "{name} works on the {team}'s deployment tooling.",
        "{name} finds lifetimes confusing and wants diagrams.",
        "{name} uses Neovim with rust-analyzer.",
        "{name} corrected: their team uses PostgreSQL 16, not MySQL.",
        "{name} wants weekly practice exercises on Fridays.",
    ],
    "travel-planner": [
        "{name} is vegetarian and avoids seafood.",
        "{name} prefers window seats and early morning flights.",
        "{name} is planning a trip to Lisbon in May with two children.",
        "{name} has a Star Alliance Gold status.",
        "{name} dislikes overnight layovers longer than four hours.",
        "{name} wants hotels within walking distance of public transport.",
        "{name} changed plans: the Kyoto trip moves from April to October.",
        "{name} travels with the {team} twice a year for offsites.",
        "{name} asked for budget estimates in euros.",
    ],
}
GROUP_FACTS = [
    "The {team} is migrating its services to Kubernetes this quarter.",
    "The {team} holds its planning meeting on Mondays at 10:00 CET.",
    "The {team} standardised on English for all written communication.",
    "The {team}'s on-call rotation changes every Wednesday.",
    "The {team} is preparing an offsite in Porto in June.",
]
COLLECTIVE_FACTS = [
    "Users respond better when the first answer gives the shortest path to a fix.",
    "Most users prefer links to documentation over pasted walls of text.",
    "Asking one clarifying question beats guessing when a request is ambiguous.",
    "Users appreciate being told how long a step will take.",
]
SHARD_FACTS = {
    "product-feedback": [
        "Several users asked for a dark mode in the desktop app.",
        "Users praise the new invoice export but want CSV as well as PDF.",
        "Users find the SSO setup wizard confusing at the domain verification step.",
        "Users want per-project notification settings.",
    ],
    "known-issues": [
        "Login loops on Safari 17 when third-party cookies are blocked; workaround: allow cookies.",
        "Invoice PDFs show the wrong currency symbol for CHF accounts.",
        "Desktop app 4.2 crashes on Linux with Wayland; workaround: --ozone-platform=x11.",
    ],
}


@dataclass
class DemoCounts:
    agents: int = 0
    scopes: int = 0
    observations: int = 0
    versions: int = 0


def demo_present(*, store: MemoryStore) -> bool:
    return store.agents.get(AGENTS[0]) is not None


def seed_demo(*, store: MemoryStore, seed: int = 7) -> DemoCounts:
    """Write the demo data set; run it on an empty store (see `demo_present`)."""
    rng = random.Random(seed)
    counts = DemoCounts(agents=len(AGENTS))
    names = list(FIRST_NAMES)
    for index, agent_id in enumerate(AGENTS):
        groups = GROUPS[agent_id]
        for user_number, name in enumerate(names[index * 10 : index * 10 + 10]):
            group_id, team = groups[user_number % len(groups)]
            user_id = f"user-{name.lower().replace('á', 'a').replace('í', 'i')}"
            scope, _ = scope_get_or_create(
                store=store, key=ScopeKey.individual(agent_id, user_id), display_name=name
            )
            texts = [t.format(name=name, team=team) for t in rng.sample(PERSONAL[agent_id], 8)]
            _fill(store, rng, scope, texts, counts, user_ids=[user_id])
        for group_id, team in groups:
            scope, _ = scope_get_or_create(
                store=store, key=ScopeKey.group(agent_id, group_id), display_name=team
            )
            texts = [t.format(team=team) for t in GROUP_FACTS]
            _fill(store, rng, scope, texts, counts, user_ids=[])
        scope, _ = scope_get_or_create(store=store, key=ScopeKey.collective(agent_id))
        _fill(store, rng, scope, list(COLLECTIVE_FACTS), counts, user_ids=[])
        for shard_name, prompt in SHARDS.get(agent_id, []):
            scope, _ = scope_get_or_create(
                store=store,
                key=ScopeKey.collective(agent_id, shard_name),
                defaults={"extraction_prompt": prompt},
            )
            _fill(store, rng, scope, list(SHARD_FACTS[shard_name]), counts, user_ids=[])
    return counts


def _fill(
    store: MemoryStore,
    rng: random.Random,
    scope: Scope,
    texts: list[str],
    counts: DemoCounts,
    *,
    user_ids: list[str],
) -> None:
    """Observations from a few sessions over the last weeks, then two consolidation runs."""
    counts.scopes += 1
    now = utcnow()
    observations: list[Observation] = []
    for number, text in enumerate(texts):
        days_ago = (len(texts) - number) * rng.randint(2, 6)
        session = f"sess-{rng.randrange(16**6):06x}"
        observed = now - timedelta(days=days_ago, minutes=rng.randint(0, 600))
        observations.append(
            Observation(
                scope_id=scope.id,
                agent_id=scope.agent_id,
                content=text,
                observed_at=observed,
                created_at=observed + timedelta(minutes=2),
                source_session_id=session,
                source_message_ids=[f"{session}-m{rng.randint(1, 40)}" for _ in range(2)],
                related_user_ids=list(user_ids),
            )
        )
    append_in_transaction(store=store, scope_id=scope.id, observations=observations, now=now)
    store.agents.adjust_counters(
        scope.agent_id, now=now, observations=len(observations), pending=len(observations)
    )
    counts.observations += len(observations)
    # The dashboard's chart reads the daily counters: count each observation on its own day,
    # as formation does when it writes one, so the seeded weeks show on the chart.
    for observation in observations:
        activity_record(
            store=store, agent_id=scope.agent_id, now=observation.created_at, observations=1
        )
    # Version 1 absorbs the older half, version 2 most of the rest; the newest stay pending.
    first, second = len(texts) // 2, len(texts) - 2
    for absorbed in (observations[:first], observations[first:second]):
        if not absorbed:
            continue
        current = scope_get(store=store, scope_id=scope.id)
        known = [o.content for o in observations[: observations.index(absorbed[-1]) + 1]]
        consolidation_commit(
            store=store,
            scope=current,
            expected_version=current.consolidation_version,
            text=" ".join(known),
            absorbed_ids=[o.id for o in absorbed],
            trigger="threshold",
            actor="demo-seed",
        )
        counts.versions += 1
