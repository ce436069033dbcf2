"""System checks: an OpenAI-compatible base URL without its `/v1` path is flagged."""

from __future__ import annotations

from memory_admin.checks import base_urls_include_the_api_path


def test_a_base_url_without_its_api_path_is_flagged(settings):
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = "http://localhost:11434"
    settings.OPENAI_BASE_URL = "https://api.openai.com/v1"
    [warning] = base_urls_include_the_api_path()
    assert warning.id == "memory_admin.W001"
    assert "MEMORY_CHAT_UPSTREAM_BASE_URL" in warning.msg
    assert warning.hint.endswith("http://localhost:11434/v1")


def test_base_urls_with_a_path_or_unset_pass(settings):
    settings.MEMORY_CHAT_UPSTREAM_BASE_URL = "http://gateway.internal/openai/v1/"
    settings.OPENAI_BASE_URL = None
    assert base_urls_include_the_api_path() == []
