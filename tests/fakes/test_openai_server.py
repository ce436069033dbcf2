"""The fake OpenAI server, driven by the real `openai` client: no mocks anywhere.

These tests pin down what the client does against each failure mode, which is what the
app's LLM port has to handle: the exception class, the number of attempts, the time taken.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

import openai
import pytest
from django.conf import settings as django_settings

from tests.fakes.openai_server import (
    FakeOpenAI,
    MalformedBody,
    RecordedRequest,
    Reply,
    embedding_vector,
)

USER = [{"role": "user", "content": "Remember that I like tea."}]
ClientFactory = Callable[..., openai.OpenAI]


@pytest.fixture
def client(fake_openai: FakeOpenAI) -> ClientFactory:
    """A real client aimed at the fake; tests pick retries and timeout per case."""

    def make(max_retries: int = 2, timeout: float = 2.0, **kwargs: object) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=fake_openai.base_url,
            api_key="test-key",
            max_retries=max_retries,
            timeout=timeout,
            **kwargs,  # type: ignore[arg-type]
        )

    return make


def chat(client: openai.OpenAI, **kwargs: object) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(model="fast-model", messages=USER, **kwargs)  # type: ignore[call-overload]


def test_fixture_points_settings_and_env_at_the_fake(fake_openai: FakeOpenAI) -> None:
    assert fake_openai.base_url.startswith("http://127.0.0.1:")
    assert fake_openai.base_url.endswith("/v1")
    assert os.environ["OPENAI_BASE_URL"] == fake_openai.base_url == django_settings.OPENAI_BASE_URL
    assert os.environ["OPENAI_API_KEY"] == "test-key" == django_settings.OPENAI_API_KEY
    assert django_settings.MEMORY_LLM_PROVIDER == "openai"
    assert django_settings.MEMORY_LLM_TIMEOUT_SECONDS == 2
    assert django_settings.MEMORY_LLM_MAX_RETRIES == 2
    assert fake_openai.requests == [] and fake_openai.pending == 0


def test_reply_and_usage_round_trip(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    fake_openai.reply("Noted: tea.")

    completion = chat(client())

    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "fast-model"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Noted: tea."
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens == 7  # "Remember that I like tea." is 25 characters
    assert usage.completion_tokens == 3
    assert usage.total_tokens == 10
    [request] = fake_openai.chat_requests
    assert request.method == "POST"
    assert request.body["messages"] == USER
    assert request.header("authorization") == "Bearer test-key"


def test_reply_json_is_parsed(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    fake_openai.reply_json({"observations": [{"text": "likes tea", "importance": 3}]})

    completion = chat(client(), response_format={"type": "json_object"})

    content = completion.choices[0].message.content
    assert json.loads(content or "") == {"observations": [{"text": "likes tea", "importance": 3}]}
    assert fake_openai.chat_requests[0].wants_json


def test_default_responder_and_set_responder(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    llm = client()
    assert chat(llm).choices[0].message.content == "This is a reply from the fake OpenAI server."
    json_reply = chat(llm, response_format={"type": "json_object"}).choices[0].message.content
    assert json_reply == '{"observations": []}'

    def shout(request: RecordedRequest) -> str:
        return request.body["messages"][-1]["content"].upper()

    fake_openai.set_responder(shout)
    assert chat(llm).choices[0].message.content == "REMEMBER THAT I LIKE TEA."
    fake_openai.reset()
    assert chat(llm).choices[0].message.content == "This is a reply from the fake OpenAI server."


def test_memory_task_header_is_recorded(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    chat(client(default_headers={"X-Memory-Task": "extraction"}))
    chat(client(), extra_headers={"x-memory-task": "consolidation"})
    chat(client())

    assert [r.task for r in fake_openai.chat_requests] == ["extraction", "consolidation", None]
    assert fake_openai.chat_requests[0].header("X-MEMORY-TASK") == "extraction"


def test_server_errors_are_retried_until_success(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.fail(500, times=2).reply("third time lucky")

    started = time.monotonic()
    completion = chat(client(max_retries=2))

    assert completion.choices[0].message.content == "third time lucky"
    assert len(fake_openai.chat_requests) == 3
    assert fake_openai.pending == 0
    assert time.monotonic() - started < 0.7  # retry-after-ms; the client's backoff takes >= 1.1 s


def test_server_errors_beyond_the_retry_budget_raise(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.fail(500, times=5, message="model overloaded")

    with pytest.raises(openai.InternalServerError) as caught:
        chat(client(max_retries=2))

    assert caught.value.status_code == 500
    assert "model overloaded" in caught.value.message
    assert len(fake_openai.chat_requests) == 3
    assert fake_openai.pending == 2


def test_rate_limit_raises_after_retries(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    fake_openai.fail(429, times=3)

    with pytest.raises(openai.RateLimitError) as caught:
        chat(client(max_retries=2))

    assert caught.value.code == "rate_limit_exceeded"
    assert len(fake_openai.chat_requests) == 3


def test_without_retry_after_the_client_backs_off_exponentially(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.fail(503, retry_after=None).reply("ok")

    started = time.monotonic()
    chat(client(max_retries=1))

    first, second = fake_openai.chat_requests
    assert second.time - first.time >= 0.35  # 0.5 s minus at most 25 % jitter
    assert time.monotonic() - started < 1.5


def test_delay_past_the_timeout_raises_timeout_quickly(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.delay(3)

    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(client(max_retries=0, timeout=0.5))

    assert 0.4 < time.monotonic() - started < 1.0
    assert issubclass(openai.APITimeoutError, openai.APIConnectionError)


def test_delay_within_the_timeout_then_answers(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.delay(0.2, then="worth the wait")

    assert chat(client(timeout=2)).choices[0].message.content == "worth the wait"


def test_malformed_json_body_raises_a_plain_json_error(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    """Not an openai.APIError: the client calls `response.json()` unguarded, so a port
    that only catches `openai.APIError` lets this through. It is not retried either."""
    fake_openai.malformed_body()

    with pytest.raises(json.JSONDecodeError) as caught:
        chat(client(max_retries=2))

    assert not isinstance(caught.value, openai.APIError)
    assert len(fake_openai.chat_requests) == 1


def test_non_json_content_type_is_returned_as_text_unless_strict(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.enqueue(MalformedBody(b"<html>oops</html>", "text/html"))
    assert chat(client()) == "<html>oops</html>"  # a str where a ChatCompletion was expected

    fake_openai.enqueue(MalformedBody(b"<html>oops</html>", "text/html"))
    with pytest.raises(openai.APIResponseValidationError):
        chat(client(_strict_response_validation=True))


def test_malformed_model_content_reaches_the_caller(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.reply("not json at all")

    content = chat(client(), response_format={"type": "json_object"}).choices[0].message.content

    with pytest.raises(json.JSONDecodeError):
        json.loads(content or "")


def test_dropped_connection_raises_connection_error(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.drop_connection()

    with pytest.raises(openai.APIConnectionError) as caught:
        chat(client(max_retries=0))

    assert not isinstance(caught.value, openai.APITimeoutError)
    assert len(fake_openai.chat_requests) == 1


def test_dropped_connection_is_retried(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    fake_openai.drop_connection().reply("back again")

    assert chat(client(max_retries=1)).choices[0].message.content == "back again"
    assert len(fake_openai.chat_requests) == 2


def test_embeddings_are_deterministic_and_sized(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    fake_openai.fail(500)
    llm = client()

    single = llm.embeddings.create(model="embed", input="tea").data[0].embedding  # base64
    batch = llm.embeddings.create(model="embed", input=["tea", "coffee"], encoding_format="float")

    assert len(single) == 16
    assert single == batch.data[0].embedding == embedding_vector("tea")
    assert batch.data[1].embedding != single
    assert sum(v * v for v in single) == pytest.approx(1.0, abs=1e-5)
    assert [d.index for d in batch.data] == [0, 1]
    assert batch.usage.prompt_tokens == 3

    fake_openai.embedding_dimensions = 8
    assert len(llm.embeddings.create(model="embed", input="tea").data[0].embedding) == 8
    asked = llm.embeddings.create(model="embed", input="tea", dimensions=4).data[0].embedding
    assert asked == embedding_vector("tea", 4)
    assert len(fake_openai.embedding_requests) == 4
    assert fake_openai.chat_requests == [] and fake_openai.pending == 1  # never scripted


def test_unknown_paths_answer_an_openai_404(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client().models.list()

    assert caught.value.code == "unknown_url"
    assert fake_openai.requests[0].path == "/v1/models"


def test_requests_are_recorded_in_order(fake_openai: FakeOpenAI, client: ClientFactory) -> None:
    llm = client()
    chat(llm, extra_headers={"X-Memory-Task": "extraction"})
    llm.embeddings.create(model="embed", input="tea")
    chat(llm, extra_headers={"X-Memory-Task": "propagation"})

    paths = [r.path for r in fake_openai.requests]
    assert paths == ["/v1/chat/completions", "/v1/embeddings", "/v1/chat/completions"]
    assert [r.task for r in fake_openai.chat_requests] == ["extraction", "propagation"]
    times = [r.time for r in fake_openai.requests]
    assert times == sorted(times)

    fake_openai.reset()
    assert fake_openai.requests == []


def test_script_is_consumed_once_under_concurrency(
    fake_openai: FakeOpenAI, client: ClientFactory
) -> None:
    """Eight threads, eight scripted replies: each reply goes to exactly one request."""
    fake_openai.enqueue(*[Reply(f"reply {i}") for i in range(8)])
    llm = client()
    answers: list[str] = []

    def call() -> None:
        answers.append(chat(llm).choices[0].message.content or "")

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)

    assert sorted(answers) == [f"reply {i}" for i in range(8)]
    assert fake_openai.pending == 0


def test_the_propagation_responder_answers_with_targets_exactly_as_listed():
    from streams.llm.port import PropagationContext
    from streams.prompts import render_propagation
    from streams.prompts.defaults import DEFAULT_TEMPLATES
    from tests.fakes.openai_wire import RecordedRequest, propagation_prompt, propagation_responder

    context = PropagationContext(
        observations=["Exports need admin rights."],
        targets=["collective"],
        source_description="group Eden Team",
        candidates=[("a" * 24, "Exports need admin rights.")],
    )
    prompt = render_propagation(DEFAULT_TEMPLATES["propagation"], context)
    parts = propagation_prompt(prompt)
    assert parts.targets == ["collective"] and parts.candidates == {
        "a" * 24: context.candidates[0][1]
    }
    request = RecordedRequest(
        "POST", "/v1/chat/completions", {}, {"messages": [{"content": prompt}]}, 0.0
    )
    answer = json.loads(propagation_responder()(request))
    assert answer == {
        "observations": [
            {"content": "Exports need admin rights.", "scope": "collective", "supports": "a" * 24}
        ]
    }
