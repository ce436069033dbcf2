"""`check_real_model` against the fake in its "real model shapes" mode (issue 39, item 5):
the report says what the checks refused, per shape, and that nothing refused was stored."""

from __future__ import annotations

import pytest

from benchmarks import check_real_model
from streams.store import MemoryStore
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def small_timeouts(settings, fake_openai: FakeOpenAI) -> None:
    settings.MEMORY_LLM_MAX_RETRIES = 0
    settings.MEMORY_LLM_TASK_TIMEOUTS = dict.fromkeys(
        ("extraction", "consolidation", "propagation"), 0.5
    )


def _check(store: MemoryStore, memory_db: str, capsys) -> tuple[int, str]:
    name = f"{memory_db}_check"
    try:
        code = check_real_model.run(
            argv=["--sessions", "1"], make_store=lambda _: MemoryStore(store.client, name)
        )
    finally:
        store.client.drop_database(name)  # the throwaway store
    out = capsys.readouterr().out
    print(out)  # the report, for `pytest -s`
    return code, out


def test_against_real_model_shapes_the_report_says_what_was_refused_and_that_it_held(
    store: MemoryStore, memory_db: str, fake_openai: FakeOpenAI, small_timeouts, capsys
) -> None:
    # Every recorded shape, per task, in turn, from a server that refuses temperature too.
    fake_openai.real_model_shapes(refuse=("temperature",))

    code, out = _check(store, memory_db, capsys)

    assert code == 0, out
    # The server refused both JSON modes and temperature: taken once, said, and kept.
    assert "negotiated: response_format text, temperature refused, not sent" in out
    assert "refused temperature" in out
    assert "refused response_format json_schema" in out  # ... and the warning says so
    assert "formation: empty (offline rules find facts)" in out
    assert "consolidation: refused (log_lines)" in out
    assert "consolidation: refused (echo)" in out
    assert "consolidation: refused (no_sentence)" in out  # UPDATED MEMORY
    assert "formation: cut at max_tokens" in out and "consolidation: timed out" in out
    assert "propagation: empty (nothing shared of what was offered)" in out
    for line in [
        "every stored observation in a scope the prompts listed | yes",
        "nothing committed that the answer checks refuse | yes",
        "limits kept (max_tokens on every call, none past it or its timeout) | yes",
    ]:
        assert line in " ".join(out.split()).replace("| |", "|"), out
    assert "HELD" in out


def test_without_a_server_configured_it_says_what_to_set(settings, capsys, monkeypatch) -> None:
    settings.OPENAI_BASE_URL = ""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert check_real_model.run(argv=[]) == 2
    assert "set OPENAI_BASE_URL" in capsys.readouterr().out
