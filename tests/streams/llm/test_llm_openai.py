"""The OpenAI provider against the fake OpenAI server, with the real `openai` client.

No mocks: retries, timeouts and response parsing are the client's own, so these tests
prove what the domain relies on, that every failure arrives as an `LLMError`.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time

import openai
import pytest

from memory_admin.integrations.llm import get_llm_provider
from streams.llm.offline import OfflineProvider
from streams.llm.openai_provider import SYSTEM_MESSAGE, OpenAIProvider
from streams.llm.port import (
    ConsolidationContext,
    ExtractionContext,
    LLMError,
    LLMRequest,
    PropagationContext,
)
from tests.fakes.openai_server import FakeOpenAI, MalformedBody, embedding_vector
from tests.fakes.openai_wire import DEFAULT_JSON_TEXT, DEFAULT_TEXT, estimate_tokens

EXTRACTION_JSON = '{"observations": [{"content": "Gene prefers tea.", "scope": "individual"}]}'


def make_request(task: str, prompt: str = "Remember what matters.") -> LLMRequest:
    """A request as the domain builds it: JSON and the fast model except for consolidation."""
    if task == "extraction":
        context = ExtractionContext(
            lines=[], user_name="Gene", group_names=[], shards=[], consolidations={}
        )
        return LLMRequest("extraction", prompt, context, json_output=True, tier="fast")
    if task == "consolidation":
        context = ConsolidationContext("individual memory of Gene", None, [], 200)
        return LLMRequest("consolidation", prompt, context, json_output=False, tier="slow")
    context = PropagationContext([], ["collective"], "group Eden Team")
    return LLMRequest("propagation", prompt, context, json_output=True, tier="fast")


@pytest.fixture
def provider(fake_openai: FakeOpenAI, settings) -> OpenAIProvider:
    settings.MEMORY_LLM_MODEL_FAST = "fast-model"
    settings.MEMORY_LLM_MODEL_SLOW = "slow-model"
    built = get_llm_provider()
    assert isinstance(built, OpenAIProvider)
    return built


@pytest.mark.parametrize(
    ("task", "model", "wants_json"),
    [
        ("extraction", "fast-model", True),
        ("consolidation", "slow-model", False),
        ("propagation", "fast-model", True),
    ],
)
def test_each_task_sends_its_header_model_and_format(
    fake_openai: FakeOpenAI, provider: OpenAIProvider, task: str, model: str, wants_json: bool
) -> None:
    result = provider.complete(make_request(task, prompt=f"the {task} prompt"))

    [sent] = fake_openai.chat_requests
    assert sent.task == task
    assert sent.body["model"] == model
    assert sent.wants_json is wants_json
    assert ("response_format" in sent.body) is wants_json
    assert sent.body["messages"] == [
        {"role": "system", "content": SYSTEM_MESSAGE},
        {"role": "user", "content": f"the {task} prompt"},
    ]
    assert result.model == model
    assert result.text == (DEFAULT_JSON_TEXT if wants_json else DEFAULT_TEXT)


def test_result_records_usage_latency_and_a_log_line(
    fake_openai: FakeOpenAI, provider: OpenAIProvider, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.delay(0.2, then=EXTRACTION_JSON)

    started = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="streams.llm"):
        result = provider.complete(make_request("extraction", prompt="What did Gene say?"))
    wall_ms = (time.perf_counter() - started) * 1000

    assert result.text == EXTRACTION_JSON
    assert json.loads(result.text)["observations"][0]["content"] == "Gene prefers tea."
    assert result.prompt_tokens == estimate_tokens(SYSTEM_MESSAGE + "What did Gene say?")
    assert result.completion_tokens == estimate_tokens(EXTRACTION_JSON)
    # The server's delay at least, the call's own time at most (no fixed ceiling: a loaded
    # CI machine once took 4.2 s for this call).
    assert 200 <= result.duration_ms <= wall_ms + 1
    assert len(fake_openai.chat_requests) == 1
    assert result.extra["finish_reason"] == "stop"
    [record] = [r for r in caplog.records if r.name == "streams.llm"]
    assert record.levelno == logging.INFO
    message = record.getMessage()
    assert "extraction" in message and "fast-model" in message
    assert f"prompt_tokens={result.prompt_tokens}" in message
    assert f"duration_ms={result.duration_ms}" in message


def test_server_errors_are_retried_until_success(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake_openai.fail(500, times=2).reply("Gene prefers tea.")

    result = provider.complete(make_request("consolidation"))

    assert result.text == "Gene prefers tea."
    assert len(fake_openai.chat_requests) == 3
    assert all(r.task == "consolidation" for r in fake_openai.chat_requests)


def test_server_errors_beyond_the_retry_budget_raise_llm_error(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake_openai.fail(500, times=3, message="the model is overloaded")

    with pytest.raises(LLMError, match=r"HTTP 500.*the model is overloaded") as caught:
        provider.complete(make_request("extraction"))

    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert len(fake_openai.chat_requests) == 3
    assert fake_openai.pending == 0


def test_a_client_error_is_not_retried(fake_openai: FakeOpenAI, provider: OpenAIProvider) -> None:
    fake_openai.fail(400, message="bad request body")

    with pytest.raises(LLMError, match="HTTP 400"):
        provider.complete(make_request("propagation"))

    assert len(fake_openai.chat_requests) == 1


def test_a_timeout_raises_llm_error_quickly(fake_openai: FakeOpenAI, settings) -> None:
    settings.MEMORY_LLM_TIMEOUT_SECONDS = 0.2
    fake_openai.delay(5, then=EXTRACTION_JSON, times=3)  # every attempt times out
    provider = get_llm_provider()

    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0.2 s \(3 attempt") as caught:
        provider.complete(make_request("extraction"))

    assert time.monotonic() - started < 3.0  # 3 x 0.2 s plus the client's short backoff
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert len(fake_openai.chat_requests) == 3


def test_a_body_that_is_not_json_raises_llm_error(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake_openai.malformed_body()

    with pytest.raises(LLMError, match="not valid JSON") as caught:
        provider.complete(make_request("extraction"))

    assert isinstance(caught.value.__cause__, json.JSONDecodeError)


def test_a_non_json_content_type_raises_llm_error(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake_openai.enqueue(MalformedBody(b"<html>upstream hiccup</html>", "text/html"))

    with pytest.raises(LLMError, match="not a chat completion"):
        provider.complete(make_request("consolidation"))


@pytest.mark.parametrize("content", ["", "   \n"])
def test_empty_content_raises_llm_error(
    fake_openai: FakeOpenAI, provider: OpenAIProvider, content: str
) -> None:
    fake_openai.reply(content)

    with pytest.raises(LLMError, match="empty content"):
        provider.complete(make_request("consolidation"))


def test_a_dropped_connection_raises_llm_error(fake_openai: FakeOpenAI, settings) -> None:
    settings.MEMORY_LLM_MAX_RETRIES = 1
    fake_openai.drop_connection(times=2)

    with pytest.raises(LLMError, match="could not reach") as caught:
        get_llm_provider().complete(make_request("extraction"))

    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert len(fake_openai.chat_requests) == 2


def test_a_dropped_connection_then_an_answer_succeeds(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake_openai.drop_connection().reply(EXTRACTION_JSON)

    assert provider.complete(make_request("extraction")).text == EXTRACTION_JSON


def test_a_missing_api_key_raises_llm_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAIProvider(None, "http://127.0.0.1:9/v1", "fast", "slow", 1.0, 0)

    with pytest.raises(LLMError, match="could not be created"):
        provider.complete(make_request("extraction"))


def test_embed_returns_one_vector_per_text_in_order(
    fake_openai: FakeOpenAI, provider: OpenAIProvider
) -> None:
    vectors = provider.embed(["tea", "coffee"], model="text-embedding-3-small")

    assert vectors == [embedding_vector("tea"), embedding_vector("coffee")]
    [sent] = fake_openai.embedding_requests
    assert sent.task == "embedding"
    assert sent.body["model"] == "text-embedding-3-small"
    assert provider.embed([], model="text-embedding-3-small") == []
    assert len(fake_openai.embedding_requests) == 1


def test_embed_maps_connection_failures_to_llm_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAIProvider("key", f"http://127.0.0.1:{port}/v1", "fast", "slow", 1.0, 0)

    with pytest.raises(LLMError, match="could not reach"):
        provider.embed(["tea"], model="text-embedding-3-small")


def test_one_client_per_provider_even_under_concurrency(provider: OpenAIProvider) -> None:
    clients: list[openai.OpenAI] = []
    threads = [threading.Thread(target=lambda: clients.append(provider.client)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(clients) == 8 and all(c is clients[0] for c in clients)
    assert "test-key" not in repr(provider)


def test_get_llm_provider_picks_openai_under_the_fake_and_caches_it(
    fake_openai: FakeOpenAI, settings
) -> None:
    first = get_llm_provider()

    assert isinstance(first, OpenAIProvider) and first.name == "openai"
    assert first.base_url == fake_openai.base_url
    assert (first.timeout_seconds, first.max_retries) == (2, 2)
    assert get_llm_provider() is first
    settings.MEMORY_LLM_MODEL_SLOW = "another-slow-model"
    changed = get_llm_provider()
    assert changed is not first and changed.model_slow == "another-slow-model"


def test_get_llm_provider_is_offline_without_an_api_key(settings) -> None:
    settings.OPENAI_API_KEY = None
    settings.MEMORY_LLM_PROVIDER = "offline"  # what settings/llm.py derives from no key

    provider = get_llm_provider()

    assert isinstance(provider, OfflineProvider) and provider.name == "offline"
    assert get_llm_provider() is provider
