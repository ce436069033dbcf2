"""The dry run sends the request the real run sends, for each model task (issue 37, 8).

Both sides run on the same store state with a provider that records each request and
answers from a script (the offline rules when the script is empty): the real run through
`job_execute`, the dry run through `streams.drafts.dry_run` without a draft. Their
requests are compared whole: prompt, context, schema, temperature, max_tokens.
"""

from __future__ import annotations

from bson import ObjectId

from memory_admin.jobs.tasks import formation_settings
from streams.actions.jobs import do_propagation_run
from streams.drafts.dry_run import (
    dry_run_consolidation,
    dry_run_propagation,
    run_extraction_plan,
    session_plan,
)
from streams.jobs import job_create, job_execute
from streams.llm.offline import OfflineProvider
from streams.llm.port import LLMRequest, LLMResult
from streams.memory.consolidation_jobs import consolidation_request
from streams.memory.consolidation_runs import consolidation_run
from streams.memory.formation import (
    IncomingMessage,
    formation_request,
    formation_run,
    messages_ingest,
)
from streams.memory.scopes import ScopeKey, scope_get, scope_get_or_create
from tests.factories import ObservationFactory

GROUPS = [{"id": "g1", "name": "Eden Team"}]


class Recorder:
    """A provider that keeps every request; answers `script` in order, then the offline rules."""

    name = "recorder"

    def __init__(self, *script: str) -> None:
        self.script = list(script)
        self.requests: list[LLMRequest] = []
        self.offline = OfflineProvider()

    def complete(self, request: LLMRequest) -> LLMResult:
        self.requests.append(request)
        if self.script:
            return LLMResult(text=self.script.pop(0), model="scripted")
        return self.offline.complete(request)


def run(store, job_id, provider, work):
    return job_execute(store=store, job_id=job_id, llm=provider, work=work)


def test_extraction_dry_run_sends_the_formation_request(store):
    messages_ingest(
        store=store,
        agent_id="a1",
        session_id="s1",
        user_id="u1",
        user_name="Gene",
        groups=GROUPS,
        messages=[
            IncomingMessage(id="m1", role="user", content="I prefer short answers."),
            IncomingMessage(id="m2", role="assistant", content="Noted."),
            IncomingMessage(id="m3", role="user", content="Our team ships on Fridays."),
        ],
        settings=formation_settings(),
    )
    dry = Recorder()
    run_extraction_plan(dry, session_plan(store=store, agent_id="a1", session_id="s1", draft=None))
    real = Recorder()
    job = formation_request(store=store, agent_id="a1", session_id="s1", trigger="api")
    settings = formation_settings()
    run(store, job.id, real, lambda r: formation_run(store=store, run=r, settings=settings))
    assert [r.prompt for r in dry.requests] == [r.prompt for r in real.requests]
    assert dry.requests == real.requests
    [request] = real.requests
    labels = request.schema["properties"]["observations"]["items"]["properties"]["scope"]["enum"]
    assert labels == ["individual:u1", "individual", "group:Eden Team", "collective"]


def individual_with_pending(store, *contents: str, private: str | None = None):
    scope, _ = scope_get_or_create(
        store=store, key=ScopeKey.individual("a1", "u1"), defaults={"groups": GROUPS}
    )
    for content in contents:
        ObservationFactory.create(store=store, scope=scope, content=content)
    if private:
        ObservationFactory.create(store=store, scope=scope, content=private, private=True)
    return scope_get(store=store, scope_id=scope.id)


def consolidate(store, scope, provider):
    job = consolidation_request(store=store, scope=scope, trigger="manual", actor="op")
    run(store, job.id, provider, lambda r: consolidation_run(store=store, run=r))


def test_consolidation_dry_run_sends_the_run_request_ids_and_no_private_text(store):
    scope = individual_with_pending(
        store, "Gene prefers tea.", "Gene works late.", private="Gene has diabetes."
    )
    dry = Recorder()
    shown = dry_run_consolidation(store=store, llm=dry, scope=scope, draft=None)
    real = Recorder()
    consolidate(store, scope, real)
    assert shown.prompt == real.requests[0].prompt  # the ids the model cites are shown too
    assert "diabetes" not in shown.prompt
    assert dry.requests == real.requests


def test_consolidation_dry_run_asks_the_overshoot_retry_like_the_run(store):
    scope = individual_with_pending(store, "Gene prefers tea.")
    long = "Gene likes tea. " * 400
    dry = Recorder(long, "Gene prefers tea.")
    shown = dry_run_consolidation(store=store, llm=dry, scope=scope, draft=None)
    real = Recorder(long, "Gene prefers tea.")
    consolidate(store, scope, real)
    assert len(real.requests) == 2 and "the limit is" in real.requests[1].prompt
    assert dry.requests == real.requests
    assert shown.text == "Gene prefers tea."


def test_the_contradiction_pass_is_the_same_and_the_dry_run_flags_nothing(store):
    scope, _ = scope_get_or_create(store=store, key=ScopeKey.group("a1", "g1"), display_name="Eden")
    older = ObservationFactory.create(store=store, scope=scope, content="Standup is on Mondays.")
    newer = ObservationFactory.create(store=store, scope=scope, content="Standup is on Tuesdays.")
    scope = scope_get(store=store, scope_id=scope.id)
    trailer = f"The team has a standup on Mondays.\n\nCONTRADICTIONS:\n[{older.id}] [{newer.id}]"
    dry = Recorder(trailer, "The team has a standup on Mondays.")
    dry_run_consolidation(store=store, llm=dry, scope=scope, draft=None)
    untouched = store.observations.get(ObjectId(newer.id))
    assert not untouched.contradicts and untouched.review is None
    real = Recorder(trailer, "The team has a standup on Mondays.")
    consolidate(store, scope, real)
    assert len(real.requests) == 2 and "Tuesdays" not in real.requests[1].prompt
    assert dry.requests == real.requests


def test_propagation_dry_run_sends_the_propagation_request(store):
    scope = individual_with_pending(store, "The Eden Team deploys on Fridays.")
    consolidate(store, scope, Recorder("The team deploys on Fridays."))
    scope = scope_get(store=store, scope_id=scope.id)
    dry = Recorder()
    dry_run_propagation(store=store, llm=dry, scope=scope, draft=None)
    job = job_create(
        store=store,
        kind="propagation",
        agent_id="a1",
        scope_id=scope.id,
        trigger="consolidation",
        payload={"version": scope.consolidation_version},
    )
    real = Recorder()
    run(store, job.id, real, lambda r: do_propagation_run(store=store, run=r))
    assert dry.requests == real.requests
    [request] = real.requests
    item = request.schema["properties"]["observations"]["items"]["properties"]
    assert item["scope"]["enum"] == ["group:Eden Team"]
