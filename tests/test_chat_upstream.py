"""The chat proxy's upstream side: which upstream and model, and the answer assembled from
SSE bytes however the network splits them."""

from __future__ import annotations

import json

from memory_admin.integrations.chat_upstream import (
    SseAnswer,
    answer_text,
    upstream_config,
    upstream_model,
)


def _event(content: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


def test_the_answer_is_assembled_across_arbitrary_splits():
    raw = b": keep-alive\n\n" + _event("Olá ") + _event("mundo") + b"data: [DONE]\n\n"
    for size in (1, 3, 7, len(raw)):
        answer = SseAnswer()
        for start in range(0, len(raw), size):
            answer.feed(raw[start : start + size])
        assert answer.text == "Olá mundo" and answer.done


def test_other_choices_and_junk_lines_are_ignored():
    answer = SseAnswer()
    other = {"choices": [{"index": 1, "delta": {"content": "no"}}]}
    answer.feed(b"data: {not json}\n" + f"data: {json.dumps(other)}\n".encode() + _event("yes"))
    assert answer.text == "yes"


def test_answer_text_of_a_completion_or_nothing():
    body = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    assert answer_text(json.dumps(body).encode()) == "hi"
    assert answer_text(b"<html>") == "" and answer_text(b'{"choices": []}') == ""


def test_the_model_map_renames_known_models_only(settings):
    settings.MEMORY_CHAT_MODEL_MAP = "fast=llama3.1:8b, smart = gpt-4o ,broken="
    assert upstream_model("fast") == "llama3.1:8b"
    assert upstream_model("smart") == "gpt-4o"
    assert upstream_model("broken") == "broken" and upstream_model("other") == "other"


def test_the_upstream_falls_back_to_the_llm_settings(settings):
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = None
    settings.MEMORY_CHAT_UPSTREAM_API_KEY = None
    settings.OPENAI_BASE_URL = "http://llm.internal:8000/v1/"
    settings.OPENAI_API_KEY = None
    config = upstream_config()
    assert config is not None and config.base_url == "http://llm.internal:8000/v1"
    assert config.api_key is None  # a local server (Ollama, vLLM) needs none
    settings.OPENAI_BASE_URL = None
    settings.OPENAI_API_KEY = "sk-x"
    config = upstream_config()
    assert config is not None and config.base_url == "https://api.openai.com/v1"
    settings.OPENAI_API_KEY = None
    assert upstream_config() is None
