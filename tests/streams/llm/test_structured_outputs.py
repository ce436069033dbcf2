"""Structured outputs, sampling and limits on every parsed request (issue 39, 2 and 3).

Against the fake OpenAI server, which checks the schema it receives as a strict server
does (`tests/fakes/openai_schema.py`) and can be told to refuse `response_format` or
`temperature`, like servers that lack them. The fenced answers are those a 1.5B model
gave (`shared/data/real-model-answers/README.md`, sample A').
"""

from __future__ import annotations

import json

import openai
import pytest
from django.test import Client

from memory_admin.integrations.llm import get_llm_provider
from memory_admin.jobs.tasks import formation_settings
from streams.llm import negotiation
from streams.llm.json_answer import read_json_answer
from streams.llm.port import LLMError
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.observations import observation_list
from streams.memory.scopes import ScopeKey, scope_get_or_create
from tests.fakes.openai_server import FakeOpenAI
from tests.task_mode import run_job

GROUPS = [{"id": "g1", "name": "Eden Team"}]
FENCED = """```json
{ "observations": [
  { "content": "Gene prefers to answer questions in short numbered steps.",
    "scope": "individual:u1", "about": ["u1"], "sources": ["[m1]"] },
  { "content": "The Eden Team ships on Fridays.",
    "scope": "group:Eden Team", "about": ["u1"], "sources": ["[m2]"] } ] }
```"""


STEPS = {
    "observations": [
        {
            "content": "Gene prefers short numbered steps.",
            "scope": "individual:u1",
            "about": ["u1"],
            "sources": ["m1"],
        }
    ]
}


@pytest.fixture(autouse=True)
def _answers_with_a_fact(fake_openai: FakeOpenAI) -> None:
    """These conversations hold facts: an empty extraction of them fails (`empty`, issue
    39), so the default answer here names one."""
    fake_openai.set_responder(
        lambda request: json.dumps(STEPS) if request.task == "extraction" else "Noted."
    )


def form(store, session: str = "s1"):
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id=session,
        user_id="u1",
        user_name="Gene",
        groups=GROUPS,
        messages=[
            IncomingMessage(id="m1", role="user", content="Answer me in short numbered steps."),
            IncomingMessage(id="m2", role="user", content="Our team ships on Fridays."),
        ],
        settings=formation_settings(),
    )
    job = formation_request(store=store, agent_id="a1", session_id=session, trigger="api")
    settings = formation_settings()
    return run_job(
        store=store,
        job_id=job.id,
        work=lambda run: formation_run(store=store, run=run, settings=settings),
    )


def stored(store, key):
    scope, _ = scope_get_or_create(store=store, key=key)
    return [o.content for o in observation_list(store=store, scope=scope).items]


def test_the_extraction_request_carries_its_schema_temperature_and_max_tokens(
    store, fake_openai: FakeOpenAI
):
    form(store)
    [sent] = fake_openai.chat_requests
    body = sent.body
    assert body["temperature"] == 0 and body["max_tokens"] > 0
    spec = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and spec["strict"] is True
    item = spec["schema"]["properties"]["observations"]["items"]["properties"]
    assert item["scope"]["enum"] == ["individual:u1", "individual", "group:Eden Team", "collective"]
    assert item["sources"]["items"]["enum"] == ["m1", "m2"]
    assert item["about"]["items"]["enum"] == ["u1"]


def test_a_server_refusing_json_schema_gets_json_object_once_and_health_says_so(
    store, fake_openai: FakeOpenAI
):
    fake_openai.refuse("json_schema")
    form(store, "s1")
    kinds = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert kinds == ["json_schema", "json_object"]
    form(store, "s2")  # remembered: no second refusal
    kinds = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    negotiation.forget()  # another process (a job's child, a worker) knows nothing itself
    health = Client().get("/api/v1/health").json()
    form(store, "s3")  # ... and starts from what the store kept
    kinds = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
    assert health["llm_output"] == {"output": "json_object", "temperature": True}
    assert "refused response_format json_schema" in health["warnings"][0]


def test_a_server_without_json_mode_gets_plain_text_and_its_fenced_json_is_read(
    store, fake_openai: FakeOpenAI
):
    fake_openai.refuse("json_schema", "json_object").reply(FENCED)
    run = form(store)
    assert ["response_format" in r.body for r in fake_openai.chat_requests] == [True, True, False]
    assert run.result["observations"] == 2
    group, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"))
    [copy] = observation_list(store=store, scope=group).items
    assert copy.content == "The Eden Team ships on Fridays."
    assert copy.source_message_ids == ["m2"]  # "[m2]", as the model copied it, is m2


def test_a_server_refusing_temperature_is_asked_without_it_from_then_on(
    store, fake_openai: FakeOpenAI
):
    fake_openai.refuse("temperature")
    form(store, "s1")
    form(store, "s2")
    assert ["temperature" in r.body for r in fake_openai.chat_requests] == [True, False, False]
    health = Client().get("/api/v1/health").json()
    assert health["llm_output"]["temperature"] is False


def test_an_answer_outside_the_schema_stores_nothing_and_keeps_the_messages(
    store, fake_openai: FakeOpenAI
):
    fake_openai.reply_json(
        {"observations": [{"content": "x", "scope": "individual:melanie|group:none"}]}
    )
    with pytest.raises(LLMError, match="does not follow the schema"):
        form(store)
    assert stored(store, ScopeKey.individual("a1", "u1")) == []
    assert len(store.sessions.unformed("a1", "s1", limit=10)) == 2


def test_the_fake_refuses_a_schema_a_strict_server_would(fake_openai: FakeOpenAI):
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0)
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}  # not closed
    with pytest.raises(openai.BadRequestError, match="additionalProperties must be false"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "t", "strict": True, "schema": loose},
            },
        )


def test_each_task_has_its_own_timeout(store, fake_openai: FakeOpenAI, settings):
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 2
    settings.MEMORY_LLM_TASK_TIMEOUTS = {"extraction": 0.2}
    fake_openai.delay(1, then=json.dumps(STEPS), times=3)
    with pytest.raises(LLMError, match=r"timed out after 0.2 s"):
        form(store)
    assert get_llm_provider().timeout_for("consolidation") == 2


@pytest.mark.parametrize(
    "text",
    [
        FENCED,
        'Here is the JSON you asked for:\n{"observations": []}',
        '```\n{"observations": []}\n```\nI hope this helps.',
    ],
)
def test_fences_and_leading_prose_around_json_are_tolerated(text):
    answer = read_json_answer(text, what="extraction")
    assert answer.repaired and isinstance(answer.value["observations"], list)


@pytest.mark.parametrize("text", ["UPDATED MEMORY", "```json\n{not json}\n```", ""])
def test_what_holds_no_json_object_is_an_error(text):
    with pytest.raises(LLMError, match="not valid JSON"):
        read_json_answer(text, what="extraction")


def test_clean_json_is_not_counted_as_repaired():
    assert not read_json_answer(json.dumps({"observations": []}), what="x").repaired


def test_a_retried_request_asks_for_the_same_thing(store, fake_openai: FakeOpenAI, settings):
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 0.2
    fake_openai.delay(1, then='{"observations": []}', times=3)  # the client's 3 attempts
    with pytest.raises(LLMError, match="timed out"):
        form(store)
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    settings_ = formation_settings()
    run_job(
        store=store,
        job_id=job.id,
        work=lambda run: formation_run(store=store, run=run, settings=settings_),
    )
    bodies = [json.dumps(r.body, sort_keys=True) for r in fake_openai.chat_requests]
    assert len(bodies) == 4 and len(set(bodies)) == 1  # same prompt, schema, temperature 0


def test_repairs_and_parse_failures_are_counted_per_model_and_task(store, fake_openai):
    from streams.core.documents import utcnow

    fake_openai.refuse("json_schema", "json_object").reply(FENCED).reply("UPDATED MEMORY")
    form(store, "s1")
    with pytest.raises(LLMError, match="not valid JSON"):
        form(store, "s2")
    day = utcnow().strftime("%Y-%m-%d")
    model = fake_openai.chat_requests[-1].body["model"]
    counts = store.usage.get("a1", day, "model_task", f"{model} extraction")
    assert (counts["calls"], counts["repairs"], counts["parse_failures"]) == (2, 1, 1)


def test_an_answer_cut_at_max_tokens_is_not_stored_and_pending_stays(store, fake_openai):
    from streams.memory.consolidation_jobs import consolidation_request
    from streams.memory.consolidation_runs import consolidation_run
    from streams.memory.scopes import scope_get
    from tests.factories import ObservationFactory

    scope, _ = scope_get_or_create(store=store, key=ScopeKey.individual("a1", "u1"))
    ObservationFactory.create(store=store, scope=scope, content="Gene prefers tea.")
    scope = scope_get(store=store, scope_id=scope.id)
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor=None)
    fake_openai.reply("Gene prefers tea and " + "more tea and " * 2000)  # a looping model
    with pytest.raises(LLMError, match="cut at max_tokens"):
        run_job(
            store=store, job_id=job.id, work=lambda run: consolidation_run(store=store, run=run)
        )
    [sent] = fake_openai.chat_requests
    assert sent.body["max_tokens"] == 64 + 2 * scope.consolidation_max_words + 30
    fresh = scope_get(store=store, scope_id=scope.id)
    assert fresh.consolidation_version == 0 and len(fresh.pending_observation_ids) == 1
