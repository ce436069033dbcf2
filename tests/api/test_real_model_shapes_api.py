"""Real-model shapes through the public API (issue 39, item 4): an extraction that copies
the prompt's list of choices as its label fails as `empty` and says so on the job, the
messages stay for the next `/form`, and health names the step down the server forced."""

from __future__ import annotations

from tests.api.conftest import API
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.real_model_shapes import extraction_good

SESSION = f"{API}/agents/agent-1/sessions/s1"
FACTS = ["Our team ships on Fridays.", "I live in Porto and I work at Acme."]


def test_a_copied_choice_list_fails_the_job_keeps_the_messages_and_health_says_why(
    api, run_tasks, fake_openai: FakeOpenAI
) -> None:
    fake_openai.real_model_shapes(shapes=["extraction.choice_list"])
    messages = [{"id": f"m{i}", "role": "user", "content": t} for i, t in enumerate(FACTS)]
    body = {"user_id": "u1", "user_name": "Gene", "messages": messages}
    assert api.post(f"{SESSION}/messages", body, content_type="application/json").status_code == 202

    with run_tasks():
        job_id = api.post(f"{SESSION}/form").json()["job_id"]
    job = api.get(f"{API}/jobs/{job_id}").json()

    assert job["status"] == "failed", job
    assert "only 1 unusable item(s)" in job["error"]
    assert job["result"]["outcome"] == "empty" and job["result"]["dropped"] == 1
    health = api.get(f"{API}/health").json()
    assert health["llm_output"]["output"] == "json_object"
    assert "refused response_format json_schema" in health["warnings"][0]

    fake_openai.set_responder(lambda request: extraction_good(request, "individual:u1"))
    with run_tasks():
        again = api.post(f"{SESSION}/form")  # the same messages, still unformed
    assert again.status_code == 202
    job = api.get(f"{API}/jobs/{again.json()['job_id']}").json()
    assert job["status"] == "succeeded" and job["result"]["observations"] == 1, job
