"""One way in for the model's own output (issue 37): a consolidation the model answers
passes the screen like any other text, so a secret it echoes is never stored, in any scope
type."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import API
from tests.factories import ScopeFactory
from tests.fakes.openai_server import FakeOpenAI

SK = "sk-proj-abcdefghijklmnopqrstuvwx123"
TRAITS = {
    "individual": {},
    "group": {"group": True},
    "collective": {"collective": True},
    "shard": {"shard": True},
}


def add(api: Any, scope_id: str, text: str) -> None:
    response = api.post(
        f"{API}/scopes/{scope_id}/observations", {"content": text}, content_type="application/json"
    )
    assert response.status_code == 201, response.content


@pytest.mark.parametrize("kind", list(TRAITS))
def test_a_secret_in_the_model_s_consolidation_is_redacted(
    api, store, run_tasks, fake_openai: FakeOpenAI, kind
):
    scope = ScopeFactory.create(store=store, agent_id="agent-1", **TRAITS[kind])
    api.patch(
        f"{API}/scopes/{scope.id}", {"consolidation_threshold": 2}, content_type="application/json"
    )
    answer = f"The team deploys with token {SK} on Fridays."
    fake_openai.set_responder(lambda r: '{"observations": []}' if r.wants_json else answer)
    with run_tasks():
        add(api, scope.id, "The team deploys on Fridays.")
        add(api, scope.id, "Deploys need the release token.")
    body = api.get(f"{API}/scopes/{scope.id}").json()
    assert body["consolidation_version"] == 1, body
    assert SK not in body["consolidation"] and "[redacted secret]" in body["consolidation"]
    versions = api.get(f"{API}/scopes/{scope.id}/consolidations").json()["items"]
    assert versions and all(SK not in v["text"] for v in versions)
