"""`python -m benchmarks end_to_end` on a tiny slice (issue 39, item 6): one LoCoMo session
through ingest, formation, consolidation and context, scored against raw turns."""

from __future__ import annotations

import pytest

from benchmarks import end_to_end
from streams.store import MemoryStore

pytestmark = pytest.mark.skipif(
    not end_to_end.LOCOMO.is_dir(), reason="the LoCoMo dev conversations are not here"
)


def test_one_session_goes_through_the_pipeline_and_is_scored(
    store: MemoryStore, memory_db: str, capsys
) -> None:
    made: list[str] = []

    def make_store(name: str) -> MemoryStore:
        made.append(f"{memory_db}_{name.replace('-', '_')}")
        return MemoryStore(store.client, made[-1])

    try:
        results = end_to_end.run(
            argv=["--sessions", "1", "--conversations", "conv-26"], make_store=make_store
        )
    finally:
        for name in made:
            store.client.drop_database(name)
    out = capsys.readouterr().out
    raw = results["conv-26"]["raw turns (search top 5)"]
    ours = results["conv-26"]["offline provider (pipeline)"]
    assert raw.questions == ours.questions > 0  # the same questions, evidence in session 1
    assert raw.stored == 18 and 0 < ours.stored < raw.stored  # 18 turns; fewer observations
    assert 0 < raw.evidence <= 1 and 0 <= ours.evidence <= 1 and 0 <= ours.terms <= 1
    assert ours.tokens > 0  # the context holds the memory formed from the session
    assert "python -m benchmarks end_to_end --sessions 1 --conversations conv-26" in out
    assert "load average" in out and "offline provider (pipeline)" in out
