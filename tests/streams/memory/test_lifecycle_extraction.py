"""Extraction may give a validity: the answer's optional `expires_at`, which the offline
provider sets from "until Friday"-style phrases and the parser keeps only when sound."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from streams.llm.offline import OfflineProvider
from streams.llm.port import ConversationLine, ExtractionContext, LLMRequest
from streams.memory.extraction_answer import _expires_at
from streams.memory.formation import formation_request
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.streams.memory.test_formation import ingest, run_formation

WEDNESDAY = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


def extracted(text: str) -> list[dict]:
    context = ExtractionContext(
        lines=[ConversationLine("user", "Gene", text, created_at=WEDNESDAY)],
        user_name="Gene",
        group_names=[],
        shards=[],
        consolidations={},
    )
    request = LLMRequest("extraction", "(prompt unused offline)", context, True, "fast")
    return json.loads(OfflineProvider().complete(request).text)["observations"]


@pytest.mark.parametrize(
    ("said", "until"),
    [
        ("I am working from Lisbon until Friday.", datetime(2026, 11, 27, 23, 59, 59, tzinfo=UTC)),
        ("I am off sick till tomorrow.", datetime(2026, 11, 26, 23, 59, 59, tzinfo=UTC)),
        ("I am working from home this week.", datetime(2026, 11, 29, 23, 59, 59, tzinfo=UTC)),
        ("I am in Oslo until Wednesday.", datetime(2026, 12, 2, 23, 59, 59, tzinfo=UTC)),
    ],
)
def test_offline_extraction_gives_a_validity_when_the_line_says_one(said, until) -> None:
    items = extracted(said)
    assert len(items) == 1
    assert datetime.fromisoformat(items[0]["expires_at"]) == until


def test_offline_extraction_gives_none_without_one() -> None:
    items = extracted("I prefer green tea.")
    assert items and all("expires_at" not in item for item in items)


def test_the_parser_keeps_only_a_sound_future_validity() -> None:
    ahead = datetime.now(UTC) + timedelta(days=2)
    assert _expires_at(ahead.isoformat()) == ahead
    assert _expires_at(ahead.isoformat().replace("+00:00", "Z")) == ahead
    for bad in (
        (datetime.now(UTC) - timedelta(days=1)).isoformat(),  # past
        "2030-01-01T10:00:00",  # no zone
        "Friday",
        12,
        None,
        "9" * 100,
    ):
        assert _expires_at(bad) is None, bad


def test_formation_stores_the_validity_the_model_gives(store, fake_openai) -> None:
    ingest(store, 4)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    until = (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0)
    fake_openai.reply(
        json.dumps(
            {
                "observations": [
                    {
                        "content": "Gene is in Lisbon until Friday",
                        "scope": "individual",
                        "expires_at": until.isoformat(),
                    },
                    {"content": "Gene prefers tea", "scope": "individual", "expires_at": "soon"},
                ]
            }
        )
    )
    run_formation(store, job.id)
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    stored = {o.content: o.expires_at for o in observation_list(store=store, scope=scope).items}
    assert stored == {"Gene is in Lisbon until Friday": until, "Gene prefers tea": None}
