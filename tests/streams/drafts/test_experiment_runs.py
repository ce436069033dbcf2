"""The prompt experiment job as a service (issue 38, item 4): a retried job starts its
inputs again (none twice), a crash marks the experiment failed with why, and nothing it
does writes memory."""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId

from memory_admin.integrations.llm import get_llm_provider
from streams.actions import Actor
from streams.actions.prompt_experiments import do_prompt_experiment_start
from streams.drafts.experiment_views import experiment_get
from streams.drafts.experiments import experiment_run
from streams.jobs import job_execute, job_retry
from streams.llm.port import LLMRequest, LLMResult
from streams.prompts import DEFAULT_TEMPLATES
from tests.factories import ObservationFactory, ScopeFactory

pytestmark = pytest.mark.django_db


class CrashesOnce:
    """The provider, but its first call raises what no provider should (a bug)."""

    def __init__(self, provider: Any) -> None:
        self.provider, self.name, self.crashed = provider, provider.name, False

    def complete(self, request: LLMRequest) -> LLMResult:
        if not self.crashed:
            self.crashed = True
            raise RuntimeError("a bug in the provider")
        return self.provider.complete(request)


def test_a_crash_fails_the_experiment_and_the_retry_runs_each_input_once(store, settings):
    settings.MEMORY_LLM_PROVIDER = "offline"
    scope = ScopeFactory.create(store=store, agent_id="a1", group=True)
    for text in ("The team ships on Fridays.", "The standup is at nine."):
        ObservationFactory.create(store=store, scope=scope, content=text)
    experiment, job = do_prompt_experiment_start(
        store=store,
        actor=Actor.cli(),
        agent_id="a1",
        kind="consolidation",
        scope_id=scope.id,
        draft=DEFAULT_TEMPLATES["consolidation"] + "\nBe brief.",
        sessions=3,
        budget_tokens=100_000,
    )
    before = store.db["memory_observations"].count_documents({"agent_id": "a1"})
    provider = CrashesOnce(get_llm_provider())

    def work(run: Any) -> None:
        experiment_run(store=store, run=run)

    with pytest.raises(RuntimeError):
        job_execute(store=store, job_id=job.id, llm=provider, work=work)
    failed = experiment_get(store=store, experiment_id=experiment["id"])
    assert failed["status"] == "failed" and "a bug in the provider" in failed["summary"]["error"]

    job_retry(store=store, job_id=job.id)
    job_execute(store=store, job_id=job.id, llm=provider, work=work)
    done = experiment_get(store=store, experiment_id=experiment["id"])
    assert done["status"] == "succeeded"
    assert [u["label"] for u in done["units"]] == ["pending now"]
    assert done["summary"]["covered"] == 1 and done["summary"]["failed_units"] == 0
    assert store.db["memory_observations"].count_documents({"agent_id": "a1"}) == before
    assert store.scopes.get(ObjectId(scope.id)).consolidation_version == 0
