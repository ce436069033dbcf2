"""`python -m benchmarks concurrency --quick` (issue 43, item 2): the production server,
client processes at levels 1 and 2, every operation answered; mem0 skipped, saying so.
And the index-entry count of `store_floor`'s second table."""

from __future__ import annotations

import pytest

from benchmarks import concurrency
from benchmarks.concurrency_clients import OPERATIONS
from benchmarks.index_entries import index_keys
from streams.store.indexes import IndexSpec, index


def test_the_quick_mode_measures_ours_at_two_levels_and_skips_mem0(capsys) -> None:
    cells = concurrency.run(argv=["--quick"])

    out = capsys.readouterr().out
    assert "mem0 skipped" in out and "load average" in out
    assert {(level, name) for level, name, _ in cells} == {
        (level, name) for level in concurrency.QUICK_LEVELS for name in OPERATIONS
    }
    assert all(system == "ours" for _, _, system in cells)
    for (level, name, _), (rate, p50, p95, errors) in cells.items():
        assert errors == 0, (level, name)
        assert rate > 0 and 0 < p50 <= p95, (level, name)
    assert "| clients | operation" in out


def test_index_keys_count_array_elements_and_skip_what_a_sparse_index_leaves_out() -> None:
    pair = index("c", "agent_id", "related_user_ids")
    sparse = IndexSpec(collection="c", keys=(("o", 1),), options={"sparse": True})

    assert len(index_keys(pair, {"agent_id": "a", "related_user_ids": ["u1", "u2"]})) == 2
    assert len(index_keys(pair, {"agent_id": "a"})) == 1  # a null entry
    assert index_keys(sparse, {"agent_id": "a"}) == set()
    assert len(index_keys(sparse, {"o": ["x", "y", "z"]})) == 3


def test_one_operation_of_ours_alone_for_an_a_b_of_a_setting() -> None:
    args = concurrency._arguments(["--operations", "single add,batch add", "--ours-only"])
    assert args.operations == ["single add", "batch add"] and args.ours_only
    assert concurrency._arguments([]).operations == list(OPERATIONS)
    with pytest.raises(SystemExit):
        concurrency._arguments(["--operations", "single ad"])
