"""The single-add benchmarks' own logic: turns read from a LoCoMo file, the skip of
`versus_mem0` without mem0's environment or under CI, and the profile's summary."""

from __future__ import annotations

import json

from benchmarks import versus_mem0
from benchmarks.single_add import profile_rows


def _conversation(tmp_path):
    path = tmp_path / "conv-1.json"
    path.write_text(
        json.dumps(
            {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Later."}],
                "session_2_date_time": "2 May 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi."},
                    {
                        "speaker": "Bob",
                        "dia_id": "D1:2",
                        "text": "Look.",
                        "blip_caption": "a dog on a beach",
                    },
                ],
                "session_1_date_time": "1 May 2023",
                "qa": [],
            }
        )
    )
    return path


def test_turns_come_per_session_in_order_with_captions(tmp_path):
    sessions = versus_mem0.sessions(_conversation(tmp_path), None)
    assert sessions == [["Ann: Hi.", "Bob: Look. [image: a dog on a beach]"], ["Bob: Later."]]


def test_a_cap_keeps_the_first_turns_only(tmp_path):
    assert versus_mem0.sessions(_conversation(tmp_path), 1) == [["Ann: Hi."]]


def test_without_mem0s_environment_the_benchmark_says_so_and_skips(monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("MEM0_PYTHON", "/nonexistent/bin/python")
    versus_mem0.run()
    out = capsys.readouterr().out
    assert "skipped" in out and "make mem0-venv" in out and "/nonexistent/bin/python" in out


def test_under_ci_the_benchmark_skips(monkeypatch, capsys):
    monkeypatch.setenv("CI", "true")
    versus_mem0.run()
    assert "skipped under CI" in capsys.readouterr().out


def test_the_profile_sums_each_stage_and_command_per_add():
    lines = [
        {
            "wsgi_ms": 10.0,
            "stages": [["ninja op", 0.1, 9.0], ["audit entry", 2.0, 1.0]],
            "commands": [["update memory_scopes", 1.0, 2.0], ["bulkWrite", 3.0, 4.0]],
        },
        {
            "wsgi_ms": 20.0,
            "stages": [["ninja op", 0.1, 19.0], ["audit entry", 2.0, 1.0]],
            "commands": [["bulkWrite", 3.0, 6.0], ["bulkWrite", 9.0, 6.0]],
        },
    ]
    rows = {row[0].strip(): row[1:] for row in profile_rows([0.012, 0.022], lines)}
    assert rows["client: request to response read"][1] == "17.00"
    assert rows["store: bulkWrite"] == ["1.50", "8.00", "12.00"]  # calls/add, median, p95
    assert rows["store: update memory_scopes"][0] == "0.50"
    assert rows["store commands, all"][0] == "2.00"
